"""Cells that parse but cannot be meant: a feature value far outside its column's robust
range (a typo of 1e12), and column names given twice (pandas would rename or drop them)."""

import numpy as np
import pandas as pd
import pytest

from mom_pipeline.inverse import InverseInputError, make_example_dataset, validate_inverse_problem
from mom_pipeline.inverse.tables import OUTLIER_THRESHOLD, robust_ranges
from mom_pipeline.pipelines.inverse.datasets import InputTableDataset

TABLES = ("features", "decisions", "constraints", "rhs", "bounds")
FILES = {name: f"data/01_raw/inverse/{name}.csv" for name in TABLES}


def _tables(n_observations=200, seed=0):
    tables = make_example_dataset(n_observations=n_observations, seed=seed)
    return {name: tables[name].copy() for name in TABLES}


def _validate(tables, **options):
    return validate_inverse_problem(**tables, add_intercept=True, file_names=FILES, **options)


def test_a_typo_of_1e12_in_one_cell_rejects_that_observation_naming_the_column():
    """Issue 51 item 3: the typo was accepted and dominated the standardizer's scale."""
    tables = _tables()
    tables["features"].loc[17, "rain_mm"] = 1e12
    problem, rejections = _validate(tables, on_invalid="report")
    assert problem.n_samples == 199 and "obs-0017" not in set(problem.ids)
    assert rejections[["id", "file", "row"]].values.tolist() == [["obs-0017", FILES["features"], 17]]
    assert "'rain_mm'" in rejections["reason"].iloc[0] and "1e+12" in rejections["reason"].iloc[0]
    assert np.abs(problem.Z).max() < 100  # nothing of the typo reaches the fit
    with pytest.raises(InverseInputError, match=r"features.csv', row 17, id 'obs-0017': .*'rain_mm'"):
        _validate(tables, on_invalid="raise")


def test_the_threshold_can_be_raised_or_turned_off():
    tables = _tables()
    tables["features"].loc[17, "rain_mm"] = 1e12
    problem, rejections = _validate(tables, on_invalid="raise", outlier_threshold=None)
    assert problem.n_samples == 200 and rejections.empty
    problem, rejections = _validate(tables, on_invalid="raise", outlier_threshold=1e13)
    assert problem.n_samples == 200


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_real_features_are_not_flagged(seed):
    """No false alarm on the shipped example (a binary column, rain that is mostly 0), on
    heavy tails and on a sparse indicator (one 1 among zeros: its median deviation is 0)."""
    tables = _tables(seed=seed)
    rng = np.random.default_rng(seed)
    features = tables["features"]
    features["income"] = rng.lognormal(0.0, 1.0, len(features))  # a heavy tail: 5 sigma is e^5
    features["incident"] = 0.0
    features.loc[3, "incident"] = 1.0
    features["student_t"] = rng.standard_t(2, len(features))
    problem, rejections = _validate(tables, on_invalid="raise")
    assert problem.n_samples == len(features) and rejections.empty


def test_robust_ranges_and_their_threshold():
    Z = np.array([[0.0, 1.0], [0.0, 2.0], [0.0, 3.0], [5.0, 4.0], [7.0, 5.0]])
    center, scale = robust_ranges(Z)
    np.testing.assert_allclose(center, [0.0, 3.0])
    # column 0: more than half the values equal the median: the deviations of the others
    np.testing.assert_allclose(scale, [1.4826 * 6.0, 1.4826 * 1.0])
    assert OUTLIER_THRESHOLD >= 100  # generous: gross typos, not a tail of real data


def _write(path, header, rows):
    path.write_text(",".join(header) + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")


def test_a_duplicated_header_in_a_csv_file_is_refused_naming_file_and_column(tmp_path):
    """Issue 51 item 4: pandas renamed the copy to rain_mm.1 (fitted as one more feature)
    and, in decisions.csv, the copy of x_1 was ignored."""
    features = tmp_path / "features.csv"
    _write(features, ["id", "rain_mm", "weekend", "rain_mm"], [["a", 1.0, 0, 2.0], ["b", 0.5, 1, 0.0]])
    # Kedro wraps the dataset's error in a DatasetError that keeps its message
    with pytest.raises(Exception, match=r"features.csv': column name 'rain_mm' appears 2 times"):
        InputTableDataset(filepath=str(features)).load()
    decisions = tmp_path / "decisions.csv"
    _write(decisions, ["id", "x_0", "x_1", "x_1"], [["a", 1, 0, 1]])
    with pytest.raises(Exception, match=r"decisions.csv': column name 'x_1' appears 2 times"):
        InputTableDataset(filepath=str(decisions)).load()
    # a column really named rain_mm.1 is no duplicate
    _write(features, ["id", "rain_mm", "rain_mm.1"], [["a", 1.0, 2.0]])
    assert list(InputTableDataset(filepath=str(features)).load().columns) == ["id", "rain_mm", "rain_mm.1"]


@pytest.mark.parametrize("optional", [False, True])
def test_an_empty_table_file_is_refused_naming_it(tmp_path, optional):
    """It stopped the run with Kedro's 'Failed while loading data' and pandas' 'No columns to
    parse from file' in a traceback."""
    features = tmp_path / "features.csv"
    features.write_text("")
    # Kedro wraps the dataset's error in a DatasetError that keeps its message
    with pytest.raises(Exception, match=r"features.csv': the file is empty \(not even a header line\); "
                                        r"it must hold one row per observation: id and the feature columns") as raised:
        InputTableDataset(filepath=str(features), optional=optional).load()
    assert isinstance(raised.value.__cause__ or raised.value, InverseInputError)  # one line on the console


def test_a_dataframe_with_a_duplicated_column_is_refused():
    tables = _tables(n_observations=20)
    features = tables["features"]
    tables["features"] = pd.concat([features, features[["weekend"]]], axis=1)
    with pytest.raises(InverseInputError, match=r"features.csv.*'weekend' appears 2 times"):
        _validate(tables, on_invalid="report")
    decisions = tables["decisions"]
    tables["features"] = features
    tables["decisions"] = pd.concat([decisions, decisions[["x_3"]]], axis=1)
    with pytest.raises(InverseInputError, match=r"decisions.csv.*'x_3' appears 2 times"):
        _validate(tables, on_invalid="report")


def test_a_new_context_far_outside_the_training_range_is_refused():
    """Prescription measures new contexts against the training features' robust ranges,
    which the model keeps (one new context has no spread of its own to compare with)."""
    from mom_pipeline.inverse.prescription import prescription_problem, record_fit
    from mom_pipeline.methods.mom import MOM

    tables = make_example_dataset(n_observations=30, grid=(3, 3), seed=2, n_new=3)
    training = {name: tables[name] for name in TABLES}
    problem, _ = validate_inverse_problem(**training, add_intercept=True)
    model = MOM(formulation="dual", lam=1e-3).fit(problem.Z, problem.X_std, lp=problem.lp)
    record_fit(model, problem, add_intercept=True, all_columns=True, outlier_threshold=OUTLIER_THRESHOLD)
    limits = {name: tables[name] for name in ("constraints", "rhs", "bounds")}
    contexts = tables["new_contexts"].copy()
    assert prescription_problem(model, problem, contexts.iloc[:1], **limits).n_samples == 1
    contexts.loc[1, "rain_mm"] = 1e12
    with pytest.raises(InverseInputError, match=r"new.csv', row 1, .*'rain_mm'"):
        prescription_problem(model, problem, contexts, **limits, file_names={"features": "new.csv"})
