"""The inverse, prescribe and inverse_example pipelines through a KedroSession."""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from inverse_user_tables import example_tables, write_user_tables
from kedro_runs import latest as _latest
from kedro_runs import run as _run
from two_choice_lp import two_choice_tables

from mom_pipeline.inverse import InverseInputError

KEDRO = str(Path(sys.executable).parent / "kedro")


def test_example_end_to_end(project_copy):
    _run(project_copy, "inverse_example")
    recovery = pd.read_csv(_latest(project_copy / "data" / "08_reporting" / "inverse_example" / "recovery.csv"))
    assert recovery["recovered_fraction"].iloc[0] > 0.8  # MOM reproduces most observed routes from x* alone
    prescriptions = pd.read_csv(_latest(project_copy / "data" / "07_model_output" / "inverse_example"
                                        / "prescriptions.csv"))
    contexts = pd.read_csv(project_copy / "data" / "01_raw" / "inverse_example" / "new_contexts.csv")
    assert list(prescriptions["id"]) == list(contexts["id"])
    routes = prescriptions.drop(columns="id").to_numpy()
    assert set(np.unique(routes)) <= {0.0, 1.0} and (routes.sum(axis=1) == 6).all()  # 4x4 grid: 6 edges
    reporting = project_copy / "data" / "08_reporting" / "inverse_example"
    curve = pd.read_parquet(_latest(project_copy / "data" / "05_model_input" / "inverse_example"
                                    / "lambda_validation.parquet"))
    assert len(curve) == 9 and curve["chosen"].sum() == 1  # the whole grid, one lambda chosen
    assert curve.loc[curve["chosen"], "reproduced_share"].iloc[0] == curve["reproduced_share"].max()
    assert _latest(reporting / "lambda_validation.png").stat().st_size > 0


def test_a_fixed_lambda_is_kept(project_copy):
    _run(project_copy, "inverse_example", inverse={"model": {"lam": 0.001}})
    curve = pd.read_parquet(_latest(project_copy / "data" / "05_model_input" / "inverse_example"
                                    / "lambda_validation.parquet"))
    assert list(curve["lam"]) == [0.001] and curve["chosen"].all()  # scored on held-out folds, not tuned


def _user_tables(project, corrupt=None, without=()):
    tables = example_tables()
    if corrupt:
        corrupt(tables)
    write_user_tables(project, tables, without)
    return tables


def test_without_a_bounds_file_every_variable_has_the_default_bounds_and_theta_is_by_variable(project_copy):
    tables = _user_tables(project_copy, without=("bounds",))
    _run(project_copy, "inverse")
    with open(_latest(project_copy / "data" / "02_intermediate" / "inverse" / "problem.pkl"), "rb") as file:
        problem = pickle.load(file)
    assert np.isinf(problem.constraints.upper).all()  # no bounds file: [0, inf) for every variable
    theta = pd.read_csv(_latest(project_copy / "data" / "07_model_output" / "inverse" / "theta.csv"))
    decisions = [c for c in tables["decisions"].columns if c != "id"]
    features = [c for c in tables["features"].columns if c != "id"] + ["intercept"]
    assert list(theta.columns) == ["variable", *features]  # the user's features, then the intercept
    assert list(theta["variable"]) == decisions  # x_0..x_23 as in decisions.csv: no slack std_* row


def test_a_missing_required_table_is_one_line_naming_the_file_and_its_content(project_copy):
    _user_tables(project_copy, without=("decisions",))
    result = subprocess.run([KEDRO, "run", "--env=smoke", "--pipelines=inverse"], cwd=project_copy,
                            capture_output=True, text=True, timeout=600,
                            env={**os.environ, "KEDRO_DISABLE_TELEMETRY": "true", "MOM_TRACEBACK": "0"})
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert "data/01_raw/inverse/decisions.csv': no such file; it must hold one row per observation: id and the " \
           "observed decision x_0..x_{n-1}" in line


def test_user_data_with_a_bad_row_is_reported_not_dropped_silently(project_copy, caplog):
    def corrupt(tables):
        tables["features"].loc[7, "rain_mm"] = np.nan
        d = tables["decisions"]
        d.loc[11, [c for c in d.columns if c != "id"]] = 0.5  # not a route: infeasible
    tables = _user_tables(project_copy, corrupt)
    with caplog.at_level("INFO", logger="mom_pipeline"):
        _run(project_copy, "inverse")
        _run(project_copy, "prescribe")
    report = _latest(project_copy / "data" / "08_reporting" / "inverse" / "rejections.csv")
    # the console says where the outputs went: the rejection report in the warning, each versioned file
    (warning,) = [r for r in caplog.records if r.levelname == "WARNING" and "rejected" in r.getMessage()]
    assert warning.getMessage() == f"inverse: 2 observations rejected, listed in {report}"
    prescriptions = _latest(project_copy / "data" / "07_model_output" / "inverse" / "prescriptions.csv")
    assert f"inverse: prescriptions written to {prescriptions}" in caplog.text
    assert "inverse: theta written to " in caplog.text
    rejections = pd.read_csv(report)
    assert sorted(rejections["id"]) == sorted([tables["features"]["id"][7], tables["decisions"]["id"][11]])
    assert set(rejections["file"]) == {"data/01_raw/inverse/features.csv", "data/01_raw/inverse/decisions.csv"}
    assert rejections["reason"].str.len().gt(0).all()
    recovery = pd.read_csv(_latest(project_copy / "data" / "08_reporting" / "inverse" / "recovery.csv"))
    assert recovery["observations"].iloc[0] == 58
    assert (project_copy / "data" / "07_model_output" / "inverse" / "prescriptions.csv").is_dir()


def test_raise_mode_names_file_and_row(project_copy):
    def corrupt(tables):
        tables["features"].loc[4, "rain_mm"] = np.inf
    _user_tables(project_copy, corrupt)
    with pytest.raises(InverseInputError, match=r"features.*row 4|row 4.*features"):
        _run(project_copy, "inverse", inverse={"on_invalid": "raise"})


def test_a_constant_feature_column_stops_the_run_before_tuning(project_copy):
    """A user's constant column duplicates the appended intercept: named with its file before
    any fit (it used to fail inside the tuning, naming the appended 'intercept')."""
    def corrupt(tables):
        tables["features"]["depot"] = 7.0
    _user_tables(project_copy, corrupt)
    with pytest.raises(Exception, match=r"file 'data/01_raw/inverse/features.csv': feature\(s\) \['depot'\] are constant"):
        _run(project_copy, "inverse")
    assert not (project_copy / "data" / "05_model_input" / "inverse").exists()  # no lambda tuned


def test_a_training_set_too_large_for_memory_stops_the_run_before_tuning(project_copy, monkeypatch):
    """The dual formulation's memory is checked on the whole training set before the tuning's
    fits on folds: the error names the sizes, the budget and how many observations fit."""
    from mom_pipeline.solvers import policy

    _user_tables(project_copy, lambda tables: None)
    monkeypatch.setattr(policy, "BLOCK_IPM_MAX_BYTES", 2**20)
    with pytest.raises(MemoryError, match=r"observations of \d+ columns .* need an estimated .* above the 1 MB "
                                          r"this fit may use \(set by .*BLOCK_IPM_MAX_BYTES\); at most \d+ observations"):
        _run(project_copy, "inverse")
    assert not (project_copy / "data" / "05_model_input" / "inverse").exists()  # no lambda tuned


def test_a_route_network_too_large_for_the_dense_method_is_fitted_by_the_network_method(project_copy, monkeypatch):
    """Without bounds the example is a node-arc incidence LP with routes: above the block
    method's budget the run goes on (MOM fits it by the working set over arcs,
    `test_block_ipm`), instead of stopping at the memory check."""
    from mom_pipeline.solvers import policy

    _user_tables(project_copy, without=("bounds",))
    monkeypatch.setattr(policy, "BLOCK_IPM_MAX_BYTES", 2**20)
    _run(project_copy, "inverse")
    theta = pd.read_csv(_latest(project_copy / "data" / "07_model_output" / "inverse" / "theta.csv"))
    assert np.isfinite(theta.select_dtypes("number").to_numpy()).all() and len(theta)


def _prescriptions(project):
    return pd.read_csv(_latest(project / "data" / "07_model_output" / "inverse" / "prescriptions.csv"),
                       dtype={"id": str})


def _rewrite(project, name, table):
    table.to_csv(project / "data" / "01_raw" / "inverse" / f"{name}.csv", index=False)


def test_prescribe_matches_new_context_columns_by_name(trained_project):
    """Issue 12 item 1: reordered columns give the same routes; a missing, renamed or
    unknown column is an error naming it and the file."""
    in_order = _prescriptions(trained_project)
    contexts = example_tables()["new_contexts"]
    _rewrite(trained_project, "new_contexts", contexts[["id"] + list(contexts.columns[:0:-1])])  # features reversed
    _run(trained_project, "prescribe")
    pd.testing.assert_frame_equal(_prescriptions(trained_project), in_order)
    path = "data/01_raw/inverse/new_contexts.csv"
    for changed, named in ((contexts.rename(columns={"rain_mm": "rain"}), r"rain_mm.*rain"),
                           (contexts.drop(columns="weekend"), "weekend"),
                           (contexts.assign(humidity=0.5), "humidity")):
        _rewrite(trained_project, "new_contexts", changed)
        with pytest.raises(InverseInputError, match=named) as raised:
            _run(trained_project, "prescribe")
        assert path in str(raised.value)


def test_prescribe_refuses_a_model_fitted_on_another_problem(trained_project, monkeypatch):
    """Issue 12 item 3: a failed inverse run leaves problem.pkl newer than model.pkl."""
    from mom_pipeline.pipelines.inverse import nodes

    project_copy = trained_project
    _rewrite(project_copy, "features", example_tables()["features"].iloc[:-5])  # another training set

    def failing_tuning(*args, **kwargs):
        raise RuntimeError("the tuning failed")

    monkeypatch.setattr(nodes, "validation_curve", failing_tuning)
    with pytest.raises(Exception, match="the tuning failed"):  # fails after problem.pkl was saved
        _run(project_copy, "inverse")
    monkeypatch.undo()
    with pytest.raises(InverseInputError, match="fitted on another problem"):
        _run(project_copy, "prescribe")


def test_prescribe_refuses_changed_constraints(trained_project):
    """Issue 12 item 8: constraints changed between inverse and prescribe -> another LP."""
    project_copy, tables = trained_project, example_tables()
    extra = pd.DataFrame({"id": ["*", "*"], "kind": ["ub", "ub"], "row": [0, 0], "col": [0, 1], "value": [1.0, 1.0]})
    _rewrite(project_copy, "constraints", pd.concat([tables["constraints"], extra], ignore_index=True))
    _rewrite(project_copy, "rhs", pd.concat([tables["rhs"], pd.DataFrame(
        {"id": ["*"], "kind": ["ub"], "row": [0], "rhs": [1.0]})], ignore_index=True))
    with pytest.raises(InverseInputError, match="fitted on another LP"):
        _run(project_copy, "prescribe")


def test_messages_name_file_paths_and_ids_stay_text(project_copy):
    """Issue 12 item 8: messages and the rejection report name file paths; zero-padded ids
    (0000) stay text in every file."""
    def corrupt(tables):
        for name in ("features", "decisions"):
            tables[name]["id"] = [f"{t:04d}" for t in range(len(tables[name]))]
        tables["new_contexts"]["id"] = [f"{t:04d}" for t in range(len(tables["new_contexts"]))]
        tables["features"].loc[7, "rain_mm"] = np.nan
    tables = _user_tables(project_copy, corrupt)
    _run(project_copy, "inverse")
    rejections = pd.read_csv(_latest(project_copy / "data" / "08_reporting" / "inverse" / "rejections.csv"),
                             dtype={"id": str})
    assert rejections[["id", "file", "row"]].values.tolist() == [["0007", "data/01_raw/inverse/features.csv", 7]]
    _run(project_copy, "prescribe")
    assert _prescriptions(project_copy)["id"].tolist() == tables["new_contexts"]["id"].tolist()
    contexts = tables["new_contexts"]
    contexts.loc[2, "hour_sin"] = np.inf
    _rewrite(project_copy, "new_contexts", contexts)
    with pytest.raises(InverseInputError, match=r"data/01_raw/inverse/new_contexts.csv', row 2, id '0002'"):
        _run(project_copy, "prescribe")


@pytest.mark.parametrize("inverse", [{"tuning": {"lambdas": [1e300]}}, {"model": {"lam": 1e300}}])
def test_a_lambda_that_reproduces_no_held_out_decision_stops_the_run(project_copy, inverse):
    """Issue 51 item 5: Theta = 0 gave arbitrary routes with exit 0."""
    _user_tables(project_copy)
    with pytest.raises(Exception, match=r"no held-out decision is reproduced by .*1e\+300"):
        _run(project_copy, "inverse", inverse=inverse)
    assert not (project_copy / "data" / "06_models" / "inverse").exists()  # no model saved


def test_a_typo_of_1e12_is_rejected_and_leaves_the_model_as_without_its_row(project_copy):
    """Issue 51 item 3: one rain_mm of 1e12 was accepted and dominated the standardizer's
    scale (recovery 92 % -> 85 %, lambda 1e-2 -> 1e-3, 2 of 20 routes changed)."""
    def typo(tables):
        tables["features"].loc[9, "rain_mm"] = 1e12
    tables = _user_tables(project_copy, typo)
    _run(project_copy, "inverse")
    _run(project_copy, "prescribe")
    rejections = pd.read_csv(_latest(project_copy / "data" / "08_reporting" / "inverse" / "rejections.csv"))
    assert rejections["id"].tolist() == [tables["features"]["id"][9]] and "'rain_mm'" in rejections["reason"][0]
    with_typo = _prescriptions(project_copy)
    curve = project_copy / "data" / "05_model_input" / "inverse" / "lambda_validation.parquet"
    chosen_with_typo = pd.read_parquet(_latest(curve)).query("chosen")["lam"].tolist()
    for name in ("features", "decisions"):
        _rewrite(project_copy, name, tables[name].drop(index=9))
    _run(project_copy, "inverse")
    _run(project_copy, "prescribe")
    assert pd.read_parquet(_latest(curve)).query("chosen")["lam"].tolist() == chosen_with_typo
    pd.testing.assert_frame_equal(_prescriptions(project_copy), with_typo)


def test_prescribe_report_mode_prescribes_the_others_and_names_each_failed_context(project_copy, caplog):
    """Issue 51 item 8: an unbounded prescription LP (or a context of 1e300) ended the run with
    `LPSolveError: sample 0`. In report mode the other contexts are prescribed, each failed one
    has empty decisions and a line of prescription_failures.csv; in raise mode the error names
    file, id, reason and column."""
    z = np.random.default_rng(0).uniform(-1, 1, 40)
    folder = project_copy / "data" / "01_raw" / "inverse"
    folder.mkdir(parents=True)
    for name, table in two_choice_tables(z).items():
        (table if table is not None else pd.DataFrame(columns=["id", "col", "lower", "upper"])).to_csv(
            folder / f"{name}.csv", index=False)
    contexts = pd.DataFrame({"id": ["a", "b", "c", "d", "e"], "z": [0.5, -3.0, 1e300, "warm", -0.4]})
    _rewrite(project_copy, "new_contexts", contexts.iloc[[0, 1, 2, 4]])
    _run(project_copy, "inverse")
    path = "data/01_raw/inverse/new_contexts.csv"
    with pytest.raises(InverseInputError, match=rf"{path}', row 2, id 'c': value 1e\+300 in column 'z'"):
        _run(project_copy, "prescribe")
    _rewrite(project_copy, "new_contexts", contexts.iloc[[0, 1, 4]])
    with pytest.raises(InverseInputError, match=rf"{path}', id 'b': the LP is unbounded.*'z' = -3.*report prescribes"):
        _run(project_copy, "prescribe")
    _rewrite(project_copy, "new_contexts", contexts)
    with caplog.at_level("WARNING"):
        _run(project_copy, "prescribe", inverse={"prescribe_on_invalid": "report"})
    prescriptions = _prescriptions(project_copy)
    assert prescriptions["id"].tolist() == ["a", "b", "c", "d", "e"]  # every context, in file order
    decided = prescriptions[["x_0", "x_1"]].notna().all(axis=1)
    assert decided.tolist() == [True, False, False, False, True]
    assert prescriptions.loc[decided, ["x_0", "x_1"]].values.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    failures = pd.read_csv(_latest(project_copy / "data" / "08_reporting" / "inverse" / "prescription_failures.csv"),
                           dtype={"id": str})
    assert failures[["id", "file", "row"]].values.tolist() == [["b", path, 1], ["c", path, 2], ["d", path, 3]]
    reasons = dict(zip(failures["id"], failures["reason"]))
    assert "1e+300" in reasons["c"] and "'warm'" in reasons["d"] and "unbounded" in reasons["b"]
    assert "3 contexts without a prescription, listed in" in caplog.text
