"""Input validation: corrupted tables are rejected naming the file and the row/id."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mom_pipeline.inverse import (
    InverseInputError,
    constraints_to_tables,
    load_inverse_problem,
    make_example_dataset,
    validate_inverse_problem,
    write_example_tables,
)
from mom_pipeline.inverse.example import grid_flow_constraints
from mom_pipeline.lp import solve_lp_batch

FILES = {name: f"data/01_raw/{name}.csv" for name in ("features", "decisions", "constraints", "rhs", "bounds")}
CORRUPTIONS = ("nan_feature", "text_feature", "nan_decision", "duplicate_id", "missing_decision_row", "infeasible",
               "non_vertex", "negative")


def _tables(seed: int) -> dict:
    tables = make_example_dataset(n_observations=12, grid=(3, 3), seed=seed)
    return {name: tables[name].copy() for name in FILES}


def _routes(tables):
    return tables["decisions"].iloc[:, 1:].to_numpy()


def corrupt(tables: dict, kind: str, r: int, q: int, j: int) -> tuple[dict, dict]:
    """Corrupt observation r (q: another row, j: a column index). Returns the tables and the
    expected rejections {id: (file key, row or None)}."""
    features, decisions = tables["features"], tables["decisions"]
    ids = features["id"].tolist()
    value_columns = [c for c in features.columns if c != "id"]
    x = _routes(tables)
    if kind == "nan_feature":
        features.loc[r, value_columns[j % len(value_columns)]] = np.nan
        return tables, {ids[r]: ("features", r)}
    if kind == "text_feature":
        column = value_columns[j % len(value_columns)]
        tables["features"] = features.astype({column: object})
        tables["features"].loc[r, column] = "n/a"
        return tables, {ids[r]: ("features", r)}
    if kind == "nan_decision":
        decisions.iloc[r, 1 + j % x.shape[1]] = np.nan
        return tables, {ids[r]: ("decisions", r)}
    if kind == "duplicate_id":  # row r takes the id of row q: q's id is ambiguous, r's id has no features row
        features.loc[r, "id"] = ids[q]
        return tables, {ids[q]: ("features", min(r, q)), ids[r]: ("features", None)}
    if kind == "missing_decision_row":
        tables["decisions"] = decisions.drop(index=r).reset_index(drop=True)
        return tables, {ids[r]: ("decisions", None)}
    if kind == "infeasible":
        decisions.iloc[r, 1 + j % x.shape[1]] += 0.5
        return tables, {ids[r]: ("decisions", r)}
    if kind == "non_vertex":  # the midpoint of two different routes: feasible, not a vertex
        others = [k for k in range(len(x)) if not np.array_equal(x[k], x[r])]
        assume(others)
        decisions.iloc[r, 1:] = 0.5 * (x[r] + x[others[q % len(others)]])
        return tables, {ids[r]: ("decisions", r)}
    if kind == "negative":
        decisions.iloc[r, 1 + j % x.shape[1]] = -1.0
        return tables, {ids[r]: ("decisions", r)}
    raise ValueError(kind)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CORRUPTIONS), st.integers(0, 3), st.integers(0, 11), st.integers(0, 11), st.integers(0, 50))
def test_corrupted_observations_are_named_and_reported_once(kind, seed, r, q, j):
    assume(r != q)
    tables, expected = corrupt(_tables(seed), kind, r, q, j)
    with pytest.raises(InverseInputError) as raised:
        load_inverse_problem(tables, file_names=FILES)
    error, message = raised.value, str(raised.value)
    assert error.id in expected and repr(error.id) in message  # names the observation,
    file, row = expected[error.id]
    assert error.file == FILES[file] and FILES[file] in message  # the file
    assert error.row == row and (row is None or f"row {row}" in message)  # and the row

    problem, report = load_inverse_problem(tables, file_names=FILES, on_invalid="report")
    assert list(report.columns) == ["id", "file", "row", "reason"]
    assert sorted(report["id"]) == sorted(expected)  # exactly one row per bad observation
    for id, (file, row) in expected.items():
        line = report[report["id"] == id].iloc[0]
        assert line["file"] == FILES[file] and line["reason"]
        assert (pd.isna(line["row"]) if row is None else line["row"] == row)
    assert set(problem.ids).isdisjoint(expected) and problem.n_samples == 12 - len(expected)
    # The survivors are intact: their standard-form decisions map back to the observed ones.
    np.testing.assert_allclose(problem.std_map.to_original(problem.X_std), problem.X_orig, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**16))
def test_clean_tables_have_no_rejection(seed):
    tables = _tables(seed)
    problem, report = load_inverse_problem(tables, add_intercept=True)
    assert len(report) == 0 and problem.n_samples == 12
    assert problem.feature_names[-1] == "intercept" and np.all(problem.Z[:, -1] == 1.0)
    np.testing.assert_array_equal(problem.X_orig, _routes(tables))
    # x* is optimal for its own costs: the basis of a vertex reproduces it.
    assert problem.basis.shape == (12, problem.lp.m)


@pytest.mark.parametrize("column", ["x_2", "x_7", "id"])
def test_dropped_decision_column_raises_in_both_modes(column):
    """A dropped column invalidates every observation: raise, naming the file (and row)."""
    tables = _tables(0)
    tables["decisions"] = tables["decisions"].drop(columns=[column])
    for mode in ("raise", "report"):
        with pytest.raises(InverseInputError) as raised:
            load_inverse_problem(tables, file_names=FILES, on_invalid=mode)
        # The 3x3 grid has 12 edges: without x_2 or x_7 the columns x_0..x_11 have a gap.
        assert raised.value.file == FILES["decisions"]
        assert (column if column == "id" else f"{column} is missing") in str(raised.value)


def test_dropped_last_decision_column_names_the_constraint_row():
    tables = _tables(0)
    tables["decisions"] = tables["decisions"].drop(columns=["x_11"])
    with pytest.raises(InverseInputError) as raised:
        load_inverse_problem(tables, file_names=FILES)
    assert raised.value.file == FILES["constraints"] and raised.value.row is not None
    assert "col 11 is out of range [0, 11)" in str(raised.value)


def test_invalid_shared_constraint_and_empty_table_raise():
    tables = _tables(0)
    tables["constraints"].loc[3, "value"] = np.inf
    with pytest.raises(InverseInputError, match=r"constraints.csv', row 3: column 'value' is infinite"):
        load_inverse_problem(tables, file_names=FILES, on_invalid="report")
    tables = _tables(0)
    tables["features"] = tables["features"].iloc[:0]
    with pytest.raises(InverseInputError, match="features.*empty"):
        load_inverse_problem(tables, on_invalid="report")
    tables = _tables(0)
    tables["rhs"] = tables["rhs"][tables["rhs"]["row"] != 2]
    with pytest.raises(InverseInputError, match="eq row 2 has coefficients .* but no rhs"):
        load_inverse_problem(tables, on_invalid="report")


def test_text_feature_column_raises_and_feature_columns_select():
    tables = _tables(0)
    tables["features"]["city"] = "Paris"
    with pytest.raises(InverseInputError, match=r"\['city'\] hold no number"):
        load_inverse_problem(tables, on_invalid="report")
    problem, _ = load_inverse_problem(tables, feature_columns=["rain_mm", "weekend"])
    assert problem.feature_names == ("rain_mm", "weekend") and problem.Z.shape == (12, 2)


def test_inconsistent_shared_equalities_raise():
    tables = _tables(0)
    rhs = tables["rhs"]
    rhs.loc[rhs["row"] == 4, "rhs"] = 1.0  # flow balance no longer sums to zero
    with pytest.raises(InverseInputError, match="inconsistent"):
        load_inverse_problem(tables, on_invalid="report")


def _per_observation_tables(T: int = 6, seed: int = 0):
    """Shortest paths on a 3x3 grid where observation t starts at node t % 3 of the bottom
    row: per-observation rhs, shared matrix and bounds."""
    A_eq, _, structure = grid_flow_constraints((3, 3))
    rng = np.random.default_rng(seed)
    ids = [f"o{t}" for t in range(T)]
    b = np.zeros((T, structure.n_nodes))
    b[np.arange(T), np.arange(T) % 3] = -1.0
    b[:, -1] = 1.0
    n = structure.n_edges
    C = rng.uniform(1.0, 2.0, (T, n))
    kept = np.arange(1, structure.n_nodes)  # drop the first (redundant) row for the LP layer
    X = solve_lp_batch(A_eq[kept], b[:, kept], C).x
    shared = constraints_to_tables(A_eq=A_eq, b_eq=b[0], lower=np.zeros(n), upper=np.ones(n))
    per_obs = constraints_to_tables(A_eq=np.broadcast_to(A_eq, (T,) + A_eq.shape), b_eq=b, ids=ids)
    features = pd.DataFrame({"id": ids, "z": rng.standard_normal(T)})
    decisions = pd.DataFrame(X, columns=[f"x_{j}" for j in range(n)])
    decisions.insert(0, "id", ids)
    return dict(features=features, decisions=decisions, constraints=shared["constraints"], rhs=per_obs["rhs"],
                bounds=shared["bounds"]), X


def test_per_observation_rhs_and_a_size_mismatch():
    tables, X = _per_observation_tables()
    problem, report = load_inverse_problem(tables)
    assert len(report) == 0 and problem.lp.A.ndim == 2 and problem.lp.b.shape == (6, problem.lp.m)
    np.testing.assert_allclose(problem.std_map.to_original(problem.X_std), X)
    # Per-observation bounds where o4's x_0 has no upper bound: its standard form has one
    # column and one row fewer than the others'.
    n = X.shape[1]
    upper = np.ones((6, n))
    upper[4, 0] = np.inf
    tables["bounds"] = constraints_to_tables(lower=np.zeros((6, n)), upper=upper, ids=list(tables["features"]["id"]))[
        "bounds"]
    with pytest.raises(InverseInputError, match="id 'o4'.*standard form has"):
        load_inverse_problem(tables)
    problem, report = load_inverse_problem(tables, on_invalid="report")
    assert report["id"].tolist() == ["o4"] and problem.n_samples == 5
    assert problem.lp.A.ndim == 2 and problem.std_map.offset.ndim == 1  # equal again: shared
    # An observation missing from the per-observation rhs is reported once.
    tables["rhs"] = tables["rhs"][tables["rhs"]["id"] != "o2"]
    problem, report = load_inverse_problem(tables, on_invalid="report")
    assert sorted(report["id"]) == ["o2", "o4"]
    assert "no row for id 'o2' in rhs" in report.set_index("id").loc["o2", "reason"]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_tables_round_trip_through_files_with_infinite_bounds(tmp_path, fmt):
    """Free and upper-only variables (-inf bounds) survive CSV and parquet."""
    tables, X = _per_observation_tables()
    n = X.shape[1]
    lower, upper = np.zeros(n), np.ones(n)
    lower[[0, 3]] = -np.inf  # x_0 <= 1 only; x_3 free below 1
    upper[3] = np.inf
    tables["bounds"] = constraints_to_tables(lower=lower, upper=upper)["bounds"]
    paths = write_example_tables(tables, tmp_path, fmt=fmt)
    read = {name: (pd.read_csv if fmt == "csv" else pd.read_parquet)(path) for name, path in paths.items()}
    direct, _ = load_inverse_problem(tables)
    loaded, report = load_inverse_problem(read)
    assert len(report) == 0
    np.testing.assert_array_equal(loaded.X_orig, direct.X_orig)
    np.testing.assert_array_equal(loaded.lp.A, direct.lp.A)
    assert "x+_3" in loaded.std_map.column_names and "upper_0 - x_0" in loaded.std_map.column_names


def test_prescription_inputs_without_decisions():
    tables = make_example_dataset(n_observations=5, grid=(3, 3), n_new=4)
    problem, report = validate_inverse_problem(tables["new_contexts"], None, tables["constraints"], tables["rhs"],
                                               tables["bounds"], n_variables=12)
    assert problem.n_samples == 4 and problem.X_orig is None and problem.X_std is None and len(report) == 0
    with pytest.raises(InverseInputError, match="n_variables"):
        validate_inverse_problem(tables["new_contexts"], None, tables["constraints"], tables["rhs"])


def test_standard_form_input_passes_through_unchanged():
    """Layout (a): only eq rows and no bounds table is A x = b, x >= 0 as given."""
    A_eq, _, structure = grid_flow_constraints((3, 3))
    A, b = structure.constraints()
    tables = _tables(0)
    standard = constraints_to_tables(A_eq=A, b_eq=b)
    assert len(standard["bounds"]) == 0
    problem, _ = validate_inverse_problem(tables["features"], tables["decisions"], standard["constraints"],
                                          standard["rhs"])
    np.testing.assert_array_equal(problem.lp.A, A)
    np.testing.assert_array_equal(problem.lp.b, b)
    np.testing.assert_array_equal(problem.X_std, problem.X_orig)


def test_box_only_lp_without_constraint_rows():
    """Only a bounds table: x in [0, 1]^3 (vertices are the 0/1 vectors)."""
    features = pd.DataFrame({"id": ["a", "b", "c"], "z": [1.0, 2.0, 3.0]})
    decisions = pd.DataFrame({"id": ["a", "b", "c"], "x_0": [0.0, 1.0, 0.5], "x_1": [1.0, 1.0, 0.0],
                              "x_2": [0.0, 0.0, 1.0]})
    bounds = constraints_to_tables(lower=np.zeros(3), upper=np.ones(3))["bounds"]
    problem, report = validate_inverse_problem(features, decisions, bounds=bounds, on_invalid="report")
    assert problem.ids.tolist() == ["a", "b"] and problem.lp.A.shape == (3, 6)
    assert report["id"].tolist() == ["c"] and "not a vertex" in report["reason"][0]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["constraints", "rhs", "bounds"]), st.integers(0, 10**6), st.integers(0, 10))
def test_nan_in_a_shared_constraint_cell_raises_in_both_modes(table, row_seed, column_seed):
    """A shared row belongs to every observation: NaN there raises, naming the file and row."""
    tables = _tables(0)
    frame = tables[table]
    row = row_seed % len(frame)
    columns = [c for c in frame.columns if c != "id"]  # an empty id just means "shared"
    frame[columns[column_seed % len(columns)]] = frame[columns[column_seed % len(columns)]].astype(object)
    frame.loc[row, columns[column_seed % len(columns)]] = np.nan
    for mode in ("raise", "report"):
        with pytest.raises(InverseInputError) as raised:
            load_inverse_problem(tables, file_names=FILES, on_invalid=mode)
        assert raised.value.file == FILES[table] and raised.value.row == row and f"row {row}:" in str(raised.value)


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(["kind", "row", "rhs"]))
def test_nan_in_a_per_observation_rhs_cell_rejects_that_observation(row_seed, column):
    tables, _ = _per_observation_tables()
    rhs = tables["rhs"]
    row = row_seed % len(rhs)
    bad_id = rhs.loc[row, "id"]
    rhs[column] = rhs[column].astype(object)
    rhs.loc[row, column] = np.nan
    with pytest.raises(InverseInputError) as raised:
        load_inverse_problem(tables, file_names=FILES)
    assert raised.value.file == FILES["rhs"] and raised.value.row == row and raised.value.id == bad_id
    problem, report = load_inverse_problem(tables, file_names=FILES, on_invalid="report")
    assert report["id"].tolist() == [bad_id] and report["row"].tolist() == [row]
    assert bad_id not in problem.ids and problem.n_samples == 5


def test_the_documented_example_tables_parse():
    """The example in the schema docstring (x_0 + x_1 <= 4, x_0 - x_2 = 1, -1 <= x_2 <= 2,
    x_1 free), read from CSV text as a user would."""
    import io

    read = lambda text: pd.read_csv(io.StringIO(text))  # noqa: E731
    constraints = read("id,kind,row,col,value\n*,ub,0,0,1\n*,ub,0,1,1\n*,eq,0,0,1\n*,eq,0,2,-1\n")
    rhs = read("id,kind,row,rhs\n*,ub,0,4\n*,eq,0,1\n")
    bounds = read("id,col,lower,upper\n*,1,-inf,inf\n*,2,-1,2\n")
    features = pd.DataFrame({"id": [1, 2, 3], "z": [0.0, 1.0, 2.0]})
    decisions = pd.DataFrame({"id": [1, 2, 3], "x_0": [0.0, 3.0, 1.0], "x_1": [4.0, 1.0, 1.0],
                              "x_2": [-1.0, 2.0, 0.0]})
    problem, report = validate_inverse_problem(features, decisions, constraints, rhs, bounds, on_invalid="report")
    assert problem.ids.tolist() == ["1", "2"] and problem.lp.A.shape == (3, 6)
    assert report["id"].tolist() == ["3"] and "not a vertex" in report["reason"][0]  # interior of the edge
