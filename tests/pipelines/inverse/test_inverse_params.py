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
    assert params.table_options() == {k: inverse[k] for k in ("add_intercept", "on_invalid", "drop_implied")}


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
