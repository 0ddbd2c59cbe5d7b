"""What one inverse run writes belongs to it: a concurrent run's artefacts never reach its
nodes (issue 51 item 1), and the clean-up keeps one run's model with its problem (item 7)."""

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from inverse_user_tables import example_tables, write_user_tables
from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project
from kedro.io.core import Version, generate_timestamp

from mom_pipeline.data_cleanup import clean
from mom_pipeline.datasets import RunParquetDataset

KEDRO = str(Path(sys.executable).parent / "kedro")


def _run(project, pipeline, load_versions=None, **runtime):
    bootstrap_project(project)
    with contextlib.chdir(project), KedroSession.create(project_path=project, env="smoke",
                                                        runtime_params=runtime or None) as session:
        session.run(pipeline_names=[pipeline], load_versions=load_versions)


def _versions(folder: Path) -> list[Path]:
    return sorted(p / folder.name for p in folder.iterdir() if p.is_dir())


def _load(path: Path):
    return pd.read_pickle(path) if path.suffix == ".pkl" else pd.read_parquet(path)


def test_a_dataset_reads_its_own_runs_version_not_the_newest(tmp_path):
    folder = tmp_path / "curve.parquet"
    mine = RunParquetDataset(filepath=str(folder), version=Version(None, "2026-01-01T00.00.00.000Z"))
    mine.save(pd.DataFrame({"lam": [0.01]}))
    later = RunParquetDataset(filepath=str(folder), version=Version(None, "2026-01-01T00.00.03.000Z"))
    later.save(pd.DataFrame({"lam": [100.0]}))  # a run started 3 s later that saved since
    assert mine.load()["lam"].tolist() == [0.01]
    # a run that did not save it reads the newest; a pinned load version is kept
    assert RunParquetDataset(filepath=str(folder), version=Version(None, None)).load()["lam"].tolist() == [100.0]
    pinned = RunParquetDataset(filepath=str(folder), version=Version("2026-01-01T00.00.00.000Z", "x"))
    assert pinned.load()["lam"].tolist() == [0.01]


def test_a_second_run_that_saves_its_lambda_first_does_not_reach_the_first_runs_model(project_copy, monkeypatch):
    """Issue 51 item 1: `kedro run --pipelines=inverse` and, 3 s later, the same with
    inverse.model.lam=100: the second run's tuning (one lambda) saves first, under the later
    version, and the first run fitted lambda 100. Simulated without racing: while the first
    run tunes, the second runs to its tuning and saves."""
    from mom_pipeline.pipelines.inverse import nodes

    write_user_tables(project_copy, example_tables())
    original = nodes.validation_curve
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "true", "MOM_PROGRESS": "0", "MPLBACKEND": "Agg"}

    def tuning_while_another_run_saves(*args, **kwargs):
        curve = original(*args, **kwargs)
        second = subprocess.run([KEDRO, "run", "--env=smoke", "--pipelines=inverse", "--to-nodes=inverse.tune_lambda",
                                 "--params", "inverse.model.lam=100"], cwd=project_copy, env=env, capture_output=True,
                                text=True, timeout=600)
        assert second.returncode == 0, second.stderr[-3000:]
        return curve

    monkeypatch.setattr(nodes, "validation_curve", tuning_while_another_run_saves)
    _run(project_copy, "inverse")
    curves = _versions(project_copy / "data" / "05_model_input" / "inverse" / "lambda_validation.parquet")
    assert len(curves) == 2
    first, second = (_load(path) for path in curves)  # the first run's version is the older one
    assert second["lam"].tolist() == [100.0]
    assert len(first) == 9 and first.loc[first["chosen"], "lam"].iloc[0] != 100.0
    (model_path,) = _versions(project_copy / "data" / "06_models" / "inverse" / "model.pkl")
    model = _load(model_path)
    assert model.lam == first.loc[first["chosen"], "lam"].iloc[0]
    pd.testing.assert_frame_equal(model.lambda_validation_, first)  # the curve that chose it


def test_a_curve_of_other_parameters_is_refused(project_copy):
    """A training step run alone (`--from-nodes`) reads the newest curve: one scored with
    other lambdas stops it, naming the cause."""
    write_user_tables(project_copy, example_tables())
    _run(project_copy, "inverse", inverse={"model": {"lam": 100.0}})
    with pytest.raises(Exception, match=r"lambda_validation scored the lambdas \[100.0\].*other parameters"):
        bootstrap_project(project_copy)
        with contextlib.chdir(project_copy), KedroSession.create(project_path=project_copy, env="smoke") as session:
            session.run(pipeline_names=["inverse"], from_nodes=["inverse.train_inverse_model"])


def test_clean_data_keeps_a_model_with_the_problem_of_its_run(trained_project, monkeypatch):
    """Issue 51 item 7: `make clean-data KEEP=1` after a failed inverse run kept the good
    run's model.pkl and deleted its problem.pkl (keeping the failed run's), so prescribe
    refused the model for good."""
    from mom_pipeline.pipelines.inverse import nodes

    project_copy, tables = trained_project, example_tables()
    _run(project_copy, "prescribe")  # a second prescribe run of the one model
    outputs = project_copy / "data" / "07_model_output" / "inverse" / "prescriptions.csv"
    before = _load_csv(_versions(outputs)[-1])
    (tables["features"].iloc[:-5]).to_csv(project_copy / "data" / "01_raw" / "inverse" / "features.csv", index=False)

    def failing_tuning(*args, **kwargs):
        raise RuntimeError("the tuning failed")

    monkeypatch.setattr(nodes, "validation_curve", failing_tuning)
    with pytest.raises(Exception, match="the tuning failed"):  # after the second problem.pkl was saved
        _run(project_copy, "inverse")
    monkeypatch.undo()
    problems = project_copy / "data" / "02_intermediate" / "inverse" / "problem.pkl"
    (model_version,) = _versions(project_copy / "data" / "06_models" / "inverse" / "model.pkl")
    assert len(_versions(problems)) == 2
    older_prescriptions = _versions(outputs)[0].parent
    failures = project_copy / "data" / "08_reporting" / "inverse" / "prescription_failures.csv"
    older_failures = _versions(failures)[0].parent  # the same prescribe run's report
    assert sorted(clean(project_copy / "data", keep=1)) == sorted([older_prescriptions, older_failures])  # nothing else
    kept = [path.parent.name for path in _versions(problems)]
    assert model_version.parent.name in kept and len(kept) == 2  # the model's run, and the newest
    # the default is still the newest problem: refused as stale, saying how to use the model
    with pytest.raises(Exception, match=r"fitted on another problem.*--load-versions=<namespace>.problem"):
        _run(project_copy, "prescribe")
    _run(project_copy, "prescribe", load_versions={"inverse.problem": model_version.parent.name})
    pd.testing.assert_frame_equal(_load_csv(_versions(outputs)[-1]), before)


def _load_csv(path):
    return pd.read_csv(path, dtype={"id": str})


def test_a_truncated_newest_problem_names_its_version_in_a_later_from_nodes_run(trained_project):
    """Issue 51 item 11: the run ended in EOFError, no version folder named."""
    project_copy = trained_project
    (problem,) = _versions(project_copy / "data" / "02_intermediate" / "inverse" / "problem.pkl")
    problem.write_bytes(problem.read_bytes()[:100])  # a kill (or a full disk) during the save
    with pytest.raises(Exception, match=rf"version '{problem.parent.name}' is incomplete or damaged .*Delete the "
                                        rf"folder {problem.parent}"):
        bootstrap_project(project_copy)
        with contextlib.chdir(project_copy), KedroSession.create(project_path=project_copy, env="smoke") as session:
            session.run(pipeline_names=["inverse"], from_nodes=["inverse.tune_lambda"])
