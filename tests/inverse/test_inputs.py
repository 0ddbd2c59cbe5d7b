"""Inverse inputs at the library level (issue 12 items 1, 3, 8): the shared-row marker as
an observation id, empty bounds, and the checks before a prescription."""

import numpy as np
import pandas as pd
import pytest

from mom_pipeline.inverse import (
    InverseInputError,
    constraints_to_tables,
    load_inverse_problem,
    make_example_dataset,
    prescribe,
)
from mom_pipeline.inverse.example import grid_flow_constraints
from mom_pipeline.inverse.prescription import prescription_problem, record_fit
from mom_pipeline.methods.mom import MOM

FILES = {name: f"data/01_raw/{name}.csv" for name in ("features", "decisions", "constraints", "rhs", "bounds")}


def _tables():
    tables = make_example_dataset(n_observations=8, grid=(3, 3), seed=1)
    return {name: tables[name].copy() for name in FILES}


@pytest.mark.parametrize("table", ["features", "decisions"])
def test_shared_marker_as_an_observation_id_is_rejected(table):
    tables = _tables()
    tables[table].loc[3, "id"] = "*"
    problem, report = load_inverse_problem(tables, file_names=FILES, on_invalid="report")
    star = report[report["reason"].str.contains("id '*'", regex=False)]
    assert star[["file", "row"]].values.tolist() == [[FILES[table], 3]]
    assert "*" not in set(problem.ids) and problem.n_samples == 7  # row 3's observation lacks a features/decisions row
    with pytest.raises(InverseInputError) as raised:
        load_inverse_problem(tables, file_names=FILES)
    assert raised.value.file == FILES[table] and raised.value.row == 3


def test_empty_bounds_are_reported_against_the_bounds_file():
    tables = _tables()
    bounds = tables["bounds"]
    bounds.loc[2, "lower"] = 5.0  # above its upper bound 1
    with pytest.raises(InverseInputError) as raised:  # a shared row: every observation is invalid
        load_inverse_problem(tables, file_names=FILES, on_invalid="report")
    assert raised.value.file == FILES["bounds"] and raised.value.row == 2 and "lower 5 > upper 1" in str(raised.value)
    ids = tables["features"]["id"].tolist()
    n = len(tables["decisions"].columns) - 1
    lower, upper = np.zeros((8, n)), np.ones((8, n))
    lower[5, 4] = 2.0
    tables["bounds"] = constraints_to_tables(lower=lower, upper=upper, ids=ids)["bounds"]
    problem, report = load_inverse_problem(tables, file_names=FILES, on_invalid="report")
    row = tables["bounds"].index[(tables["bounds"]["id"] == ids[5]) & (tables["bounds"]["col"] == 4)][0]
    assert report[["id", "file", "row"]].values.tolist() == [[ids[5], FILES["bounds"], row]]
    assert problem.n_samples == 7


def _fitted(tables, **options):
    problem, _ = load_inverse_problem(tables, **options)
    model = MOM(formulation="dual", lam=1e-3).fit(problem.Z, problem.X_std, lp=problem.lp)
    return record_fit(model, problem, add_intercept=options.get("add_intercept", False), all_columns=True), problem


def test_prescription_matches_columns_by_name_and_checks_the_lp():
    tables = make_example_dataset(n_observations=30, grid=(3, 3), seed=2, n_new=10)
    model, problem = _fitted(tables, add_intercept=True)
    limits = {name: tables[name] for name in ("constraints", "rhs", "bounds")}
    contexts = tables["new_contexts"]
    in_order = prescribe(model, prescription_problem(model, problem, contexts, **limits))
    shuffled = contexts[["id", "weekend", "hour_cos", "rain_mm", "hour_sin"]]
    pd.testing.assert_frame_equal(prescribe(model, prescription_problem(model, problem, shuffled, **limits)), in_order)
    with pytest.raises(InverseInputError, match=r"new.csv.*missing column\(s\) \['weekend'\]"):
        prescription_problem(model, problem, contexts.drop(columns="weekend"), **limits,
                             file_names={"features": "new.csv"})
    other = dict(limits, bounds=limits["bounds"].iloc[1:])  # x_0 loses its upper bound: another standard form
    with pytest.raises(InverseInputError, match="fitted on another LP"):
        prescription_problem(model, problem, contexts, **other)
    with pytest.raises(InverseInputError, match="does not say which problem"):
        prescription_problem(MOM(), problem, contexts, **limits)


def test_prescription_with_per_observation_rhs_ignores_the_training_rows():
    """Per-observation constraint tables hold rows for the training ids and the new ids;
    a prescription uses the new ids' rows only."""
    A_eq, b_eq, structure = grid_flow_constraints((3, 3))
    tables = make_example_dataset(n_observations=20, grid=(3, 3), seed=4, n_new=6)
    ids = tables["features"]["id"].tolist() + tables["new_contexts"]["id"].tolist()
    per_obs = constraints_to_tables(A_eq=np.broadcast_to(A_eq, (len(ids),) + A_eq.shape), b_eq=np.broadcast_to(b_eq, (len(ids),) + b_eq.shape), ids=ids)
    tables["rhs"] = per_obs["rhs"]
    model, problem = _fitted(tables, on_invalid="report")  # training reports the new ids (no features row)
    assert problem.n_samples == 20
    new_problem = prescription_problem(model, problem, tables["new_contexts"], tables["constraints"], tables["rhs"],
                                       tables["bounds"])
    assert new_problem.ids.tolist() == tables["new_contexts"]["id"].tolist()
    routes = prescribe(model, new_problem).drop(columns="id").to_numpy()
    assert set(np.unique(routes)) <= {0.0, 1.0} and (routes.sum(axis=1) == 4).all()  # 3x3 grid: 4 edges
