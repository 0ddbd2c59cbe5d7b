"""The inverse pipelines' typed parameters (`pipelines.inverse.params`)."""

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from mom_pipeline.methods.mom import MOM
from mom_pipeline.pipelines.inverse.params import InverseModelParams, InverseParams


def test_the_model_keys_are_moms_hyperparameters():
    """Every MOM hyperparameter can be set under inverse.model, and nothing else: a new MOM
    hyperparameter must be added here, or users could not set it."""
    assert set(InverseModelParams.model_fields) == set(MOM().get_params())


def test_the_shipped_parameters_validate_and_reach_mom():
    inverse = yaml.safe_load((Path(__file__).resolve().parents[3] / "conf" / "base" / "parameters_inverse.yml").read_text())["inverse"]
    params = InverseParams.model_validate(inverse)
    assert params.tuned and params.lambdas == list(inverse["tuning"]["lambdas"])
    model = MOM(**params.model.estimator_params(), lam=1.0)
    assert model.formulation == inverse["model"]["formulation"] and model.n_jobs == inverse["model"]["n_jobs"]
    assert params.table_options() == {k: inverse[k] for k in ("add_intercept", "on_invalid", "drop_implied",
                                                              "outlier_threshold")}


@pytest.mark.parametrize("lam", [1e-3, "0.5", 2])
def test_a_fixed_lambda_is_the_only_one_scored(lam):
    params = InverseParams.model_validate({"model": {"lam": lam}})
    assert not params.tuned and params.lambdas == [float(lam)]


@pytest.mark.parametrize("model, message", [
    ({"lam": "abc"}, "inverse.model.lam must be 'auto'"),
    ({"lam": 0}, "inverse.model.lam must be 'auto'"),
    ({"lam": float("inf")}, "inverse.model.lam must be 'auto'"),
    ({"lam": True}, "inverse.model.lam must be 'auto'"),
    ({"n_jobs": 0}, "inverse.model.n_jobs must be None, -1 or a positive integer"),
    ({"n_jobs": 1.5}, "n_jobs"),
    ({"tol": -1}, "tol"),
    ({"solver": "gurobi"}, "solver"),
])
def test_bad_model_values_name_the_parameter(model, message):
    with pytest.raises(ValidationError, match=message):
        InverseParams.model_validate({"model": model})


def test_columns_lists_pass_through():
    params = InverseParams.model_validate({"feature_columns": ["rain_mm", "hour"], "decision_columns": None})
    assert params.table_options()["feature_columns"] == ["rain_mm", "hour"]
    assert "decision_columns" not in params.table_options()


def test_the_shipped_example_parameters_validate_and_build_the_example():
    from mom_pipeline.inverse import make_example_dataset
    from mom_pipeline.pipelines.inverse.nodes import make_example
    from mom_pipeline.pipelines.inverse.params import InverseExampleParams

    example = yaml.safe_load((Path(__file__).resolve().parents[3] / "conf" / "base" / "parameters_inverse.yml")
                             .read_text())["inverse_example"]
    params = InverseExampleParams.model_validate(example)
    assert params.model_dump()["grid"] == tuple(example["grid"])
    tables = make_example(params.model_copy(update=dict(n_observations=12, n_new=3)))
    direct = make_example_dataset(**dict(example, n_observations=12, n_new=3))
    assert tables[0].equals(direct["features"]) and len(tables[-2]) == 3


def test_the_example_keys_are_the_generators_arguments_with_its_defaults():
    import inspect

    from mom_pipeline.inverse import make_example_dataset
    from mom_pipeline.pipelines.inverse.params import InverseExampleParams

    signature = inspect.signature(make_example_dataset).parameters
    assert set(InverseExampleParams.model_fields) == set(signature)
    assert InverseExampleParams().model_dump() == {name: p.default for name, p in signature.items()}


@pytest.mark.parametrize("example, message", [
    ({"n_observation": 10}, r"inverse_example: unknown parameter 'n_observation' \(did you mean 'n_observations'\?\)"),
    ({"n_observations": 0}, "n_observations"),
    ({"n_observations": 1.5}, "n_observations"),
    ({"grid": [4]}, "grid"),
    ({"grid": [1, 1]}, r"inverse_example.grid must have at least 2 nodes"),
    ({"noise": 1.0}, "noise"),
    ({"seed": -1}, "seed"),
])
def test_bad_example_values_name_the_parameter(example, message):
    from mom_pipeline.pipelines.inverse.params import InverseExampleParams

    with pytest.raises(ValidationError, match=message):
        InverseExampleParams.model_validate(example)


def test_an_optional_table_without_its_file_is_empty_and_a_required_one_names_what_it_holds(tmp_path, monkeypatch):
    from kedro.io.core import DatasetError

    from mom_pipeline.pipelines.inverse.datasets import InputTableDataset, MissingInputTable

    monkeypatch.chdir(tmp_path)
    bounds = InputTableDataset(filepath="data/01_raw/inverse/bounds.csv", optional=True).load()
    assert bounds.empty and bounds.attrs["filepath"] == "data/01_raw/inverse/bounds.csv"
    with pytest.raises(DatasetError) as raised:  # Kedro's wrapper around the dataset's own error
        InputTableDataset(filepath="data/01_raw/inverse/rhs.csv").load()
    assert isinstance(raised.value.__cause__, MissingInputTable)
    assert str(raised.value.__cause__).startswith("file 'data/01_raw/inverse/rhs.csv': no such file; it must hold "
                                                  "one row per constraint row: id, kind, row, rhs")
