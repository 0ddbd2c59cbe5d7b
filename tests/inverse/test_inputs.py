"""Issue 12 item 8 at the library level: the shared-row marker as an observation id, and
empty bounds reported against the bounds file."""

import numpy as np
import pytest

from mom_pipeline.inverse import InverseInputError, constraints_to_tables, load_inverse_problem, make_example_dataset

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
