"""Contexts whose LP has no optimum (issue 51 item 8): a feature of 1e300 or an unbounded
prescription LP ended in `LPSolveError: sample 0` (a batch position: no id, no file, no
column). Each is named, rejected under on_invalid, and one does not stop the others."""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from two_choice_lp import two_choice_tables

from mom_pipeline.inverse import InverseInputError, make_example_dataset, prescribe, validate_inverse_problem
from mom_pipeline.inverse.prescription import decide_each, prescribe_each, record_fit, validate_new_contexts
from mom_pipeline.lp import solve_lp_batch
from mom_pipeline.methods.cost_free_tuning import fit_standardized, validation_curve
from mom_pipeline.methods.mom import MOM

TABLES = ("features", "decisions", "constraints", "rhs", "bounds")
FILES = {name: f"data/01_raw/inverse/{name}.csv" for name in TABLES}
CONTEXTS = "data/01_raw/inverse/new_contexts.csv"


def _two_choice_model():
    z = np.random.default_rng(0).uniform(-1, 1, 40)
    tables = two_choice_tables(z)
    problem, _ = validate_inverse_problem(**tables, add_intercept=True, file_names=FILES)
    model = fit_standardized(MOM(lam=1e-2), problem.Z, problem.X_std, problem.lp, basis=problem.basis,
                             feature_names=problem.feature_names)
    return record_fit(model, problem, add_intercept=True, all_columns=True), problem, tables


def _new_contexts(problem, tables, z, ids=None):
    new = pd.DataFrame({"id": ids or [f"new-{k}" for k in range(len(z))], "z": z})
    return validate_new_contexts(*problem, new, tables["constraints"], tables["rhs"], None,
                                 file_names={**FILES, "features": CONTEXTS}, on_invalid="report")[0], new


@pytest.mark.parametrize("threshold", [None, 1000.0])
def test_a_feature_of_1e300_rejects_its_observation_naming_file_id_and_column(threshold):
    """Also with the outlier check off (outlier_threshold null), where the fit went on to
    `LPSolveError: sample 0` in the tuning."""
    tables = {name: make_example_dataset(n_observations=60, seed=3)[name] for name in TABLES}
    tables["features"].loc[5, "rain_mm"] = 1e300
    problem, rejections = validate_inverse_problem(**tables, add_intercept=True, file_names=FILES,
                                                   on_invalid="report", outlier_threshold=threshold)
    assert problem.n_samples == 59 and "obs-0005" not in set(problem.ids)
    assert rejections[["id", "file", "row"]].values.tolist() == [["obs-0005", FILES["features"], 5]]
    assert "'rain_mm'" in rejections["reason"][0] and "1e+300" in rejections["reason"][0]
    with pytest.raises(InverseInputError, match=r"features.csv', row 5, id 'obs-0005': value 1e\+300 in column "
                                                r"'rain_mm'"):
        validate_inverse_problem(**tables, add_intercept=True, file_names=FILES, outlier_threshold=threshold)


def test_a_new_context_of_1e300_is_named_also_without_the_outlier_check():
    model, problem, tables = _two_choice_model()
    model.fitted_on_ = record_fit(model, problem, add_intercept=True, all_columns=True,
                                  outlier_threshold=None).fitted_on_
    new = pd.DataFrame({"id": ["a", "b"], "z": [0.5, 1e300]})
    options = dict(file_names={**FILES, "features": CONTEXTS})
    with pytest.raises(InverseInputError, match=r"new_contexts.csv', row 1, id 'b': value 1e\+300 in column 'z'"):
        validate_new_contexts(model, problem, new, tables["constraints"], tables["rhs"], None, **options)
    kept, report = validate_new_contexts(model, problem, new, tables["constraints"], tables["rhs"], None,
                                         on_invalid="report", **options)
    assert list(kept.ids) == ["a"] and report[["id", "file", "row"]].values.tolist() == [["b", CONTEXTS, 1]]


def test_an_unbounded_prescription_lp_names_the_context_and_its_feature():
    model, problem, tables = _two_choice_model()
    new_problem, _ = _new_contexts((model, problem), tables, [0.5, -3.0, 0.2])
    with pytest.raises(InverseInputError, match=r"new_contexts.csv', id 'new-1': the LP is unbounded with the "
                                                r"predicted costs.*'z' = -3"):
        prescribe(model, new_problem, CONTEXTS)


def test_one_unsolvable_context_does_not_stop_the_others():
    model, problem, tables = _two_choice_model()
    z = [0.5, -3.0, 0.2, 6.0, -0.4]
    new_problem, _ = _new_contexts((model, problem), tables, z)
    table, failures = prescribe_each(model, new_problem, CONTEXTS)
    assert [f["id"] for f in failures] == ["new-1", "new-3"]
    assert all("unbounded" in f["reason"] and f["file"] == CONTEXTS for f in failures)
    assert table["id"].tolist() == [f"new-{k}" for k in range(5)]
    assert table.loc[[1, 3], ["x_0", "x_1"]].isna().all().all()
    # the others: what HiGHS gives each alone (independent of the batch that lost two samples)
    costs = model.predict_cost(new_problem.Z)
    for k in (0, 2, 4):
        alone = solve_lp_batch(new_problem.lp.A, new_problem.lp.b, costs[k:k + 1]).x
        expected = new_problem.std_map.subset([k]).to_original(alone)[0]
        np.testing.assert_allclose(table.loc[k, ["x_0", "x_1"]].to_numpy(dtype=float), expected)
    X, reasons = decide_each(model, new_problem)
    assert sorted(reasons) == [1, 3] and np.isfinite(X[[0, 2, 4]]).all()


def test_non_finite_costs_are_a_failure_of_that_context_only():
    model, problem, tables = _two_choice_model()
    new_problem, _ = _new_contexts((model, problem), tables, [0.5, 0.2])
    Z = new_problem.Z.copy()
    Z[1, 0] = 1e308  # past validation (a caller's own problem): the costs overflow
    _, reasons = decide_each(model, dataclasses.replace(new_problem, Z=Z))
    assert list(reasons) == [1] and "not finite" in reasons[1] and "'z' = 1e+308" in reasons[1]


def test_a_held_out_lp_without_optimum_names_the_observation_in_the_tuning():
    """The tuning's held-out LPs: the error named a position in the fold."""
    z = np.concatenate([np.random.default_rng(0).uniform(-1, 1, 39), [-8.0]])
    tables = two_choice_tables(z)
    problem, _ = validate_inverse_problem(**tables, add_intercept=True, file_names=FILES, outlier_threshold=None)
    with pytest.raises(ValueError, match=r"held-out observation 'obs-39' has no optimum.*Unbounded.*z=-8"):
        validation_curve({"formulation": "dual"}, problem.Z, problem.X_std, problem.lp, [1e-2], n_folds=4,
                         feature_names=problem.feature_names, ids=problem.ids)
