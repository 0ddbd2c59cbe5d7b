"""A tracking store that cannot be used (issue 51 item 9): a corrupt, locked or full mlflow.db
stopped the run before any node with an SQLAlchemy traceback that named no store. The run
goes on without tracking, with one warning that names the store and the remedy."""

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project
from mlflow.tracking import MlflowClient

from mom_pipeline.inverse import make_example_dataset
from mom_pipeline.tracking import local_tracking_uri, store_remedy

WARNING = "MLflow tracking is off for this run: the store sqlite:///"
KEDRO = str(Path(sys.executable).parent / "kedro")
ENV = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "true", "MOM_PROGRESS": "0", "MPLBACKEND": "Agg"}


def _run_inverse(project):
    tables = make_example_dataset(n_observations=40, seed=3)
    folder = project / "data" / "01_raw" / "inverse"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("features", "decisions", "constraints", "rhs", "bounds"):
        tables[name].to_csv(folder / f"{name}.csv", index=False)
    bootstrap_project(project)
    with contextlib.chdir(project), KedroSession.create(project_path=project, env="smoke",
                                                        runtime_params={"inverse": {"model": {"lam": 0.01}}}) as s:
        s.run(pipeline_names=["inverse"])


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith(WARNING)]


def test_a_corrupt_store_is_named_and_the_run_goes_on_untracked(project_copy, caplog):
    store = project_copy / "mlflow.db"
    garbage = bytes(range(256)) * 16
    store.write_bytes(garbage)
    with caplog.at_level("WARNING"):
        _run_inverse(project_copy)
    (message,) = _warnings(caplog)  # one warning
    assert f"{store} cannot be used (DatabaseError" in message and f"mv {store} {store}.broken" in message
    assert store.read_bytes() == garbage  # the store is left as it was
    models = project_copy / "data" / "06_models" / "inverse" / "model.pkl"
    assert len(list(models.iterdir())) == 1  # the run's outputs are written
    recovery = next((project_copy / "data" / "08_reporting" / "inverse" / "recovery.csv").iterdir())
    assert pd.read_csv(recovery / "recovery.csv")["observations"].tolist() == [40]


@contextlib.contextmanager
def _full_disk_under(project, names, size="4m"):
    """`names` of the project moved onto a tmpfs of `size` that is then filled (needs the right
    to mount, as root in the container), symlinked from the project."""
    disk = project.parent / "full_disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        for name in names:
            shutil.move(project / name, disk / name)
            (project / name).symlink_to(disk / name)
        with (disk / "filler").open("wb") as filler, contextlib.suppress(OSError):
            filler.write(b"\0" * shutil.disk_usage(disk).free)
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_store_on_a_full_disk_is_named_and_the_run_goes_on_untracked(project_copy, caplog):
    """The third store of the issue: a full disk under mlflow.db (and its artifacts)."""
    store = project_copy / "mlflow.db"
    (project_copy / "mlartifacts").mkdir(exist_ok=True)
    with _full_disk_under(project_copy, ("mlflow.db", "mlartifacts")), caplog.at_level("WARNING"):
        _run_inverse(project_copy)
    (message,) = _warnings(caplog)
    assert f"{store} cannot be used" in message and "if the disk is full, free space" in message
    models = project_copy / "data" / "06_models" / "inverse" / "model.pkl"
    assert len(list(models.iterdir())) == 1  # the run's outputs are written


def test_a_locked_store_is_named_and_the_next_run_is_tracked(project_copy):
    """The locked run is a `kedro run` of its own: within one process MLflow keeps the store it
    opened, as a second process that finds it locked would not."""
    _run_inverse(project_copy)  # a tracked run before the lock
    store = project_copy / "mlflow.db"
    connection = sqlite3.connect(store, isolation_level=None)
    connection.execute("BEGIN EXCLUSIVE")  # another process writing
    try:
        locked = subprocess.run([KEDRO, "run", "--env=smoke", "--pipelines=inverse", "--params",
                                 "inverse.model.lam=0.01"], cwd=project_copy, env=ENV, capture_output=True, text=True,
                                timeout=600)
    finally:
        connection.execute("ROLLBACK")
        connection.close()
    output = locked.stdout + locked.stderr
    assert locked.returncode == 0, output[-3000:]
    assert output.count("MLflow tracking is off for this run") == 1
    assert f"the store sqlite:///{store} cannot be used (OperationalError" in output
    assert "database is locked" in output and "run again when it is done" in output
    _run_inverse(project_copy)
    client = MlflowClient(tracking_uri=local_tracking_uri(project_copy))
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert [run.info.status for run in runs] == ["FINISHED", "FINISHED"]  # the locked run left none
    models = project_copy / "data" / "06_models" / "inverse" / "model.pkl"
    assert len(list(models.iterdir())) == 3  # every run wrote its model


@pytest.mark.parametrize("uri, remedy", [("sqlite:////p/mlflow.db", "mv /p/mlflow.db /p/mlflow.db.broken"),
                                         ("http://127.0.0.1:5000", "MLFLOW_TRACKING_URI")])
def test_the_remedy_fits_the_store(uri, remedy):
    assert remedy in store_remedy(uri)


def test_the_next_session_of_the_process_is_tracked_again(project_copy, caplog):
    """The hooks are one instance per process (a notebook, the tests): a session after one whose
    store failed is tracked, and does not reopen an earlier session's run. (Within one process
    MLflow keeps the engine of a store it opened: a damaged mlflow.db moved aside is used anew
    by the next process, as `kedro run` is.)"""
    second = project_copy.parent / "second_project"
    shutil.copytree(project_copy, second)
    _run_inverse(second)  # a tracked session first: its run must stay closed
    store = project_copy / "mlflow.db"
    store.write_bytes(b"not a database" * 100)
    with caplog.at_level("WARNING"):
        _run_inverse(project_copy)
    assert len(_warnings(caplog)) == 1
    _run_inverse(second)
    client = MlflowClient(tracking_uri=local_tracking_uri(second))
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert [run.info.status for run in runs] == ["FINISHED", "FINISHED"] and len(_warnings(caplog)) == 1
    assert mlflow.active_run() is None


def test_the_tracking_switch_runs_without_a_tracking_process(project_copy, monkeypatch, caplog):
    """MOM_PIPELINE_TRACKING=off: the run's outputs, no MLflow run, no tracking process."""
    from mom_pipeline import tracking_process

    started = []
    monkeypatch.setattr(tracking_process.TrackingProcess, "__init__",
                        lambda self, *a, **k: started.append(a) or (_ for _ in ()).throw(AssertionError("started")))
    monkeypatch.setenv("MOM_PIPELINE_TRACKING", "off")
    with caplog.at_level("INFO"):
        _run_inverse(project_copy)
    assert not started
    assert "MLflow tracking is off (MOM_PIPELINE_TRACKING=off)" in caplog.text
    assert len(list((project_copy / "data" / "06_models" / "inverse" / "model.pkl").iterdir())) == 1
    client = MlflowClient(tracking_uri=local_tracking_uri(project_copy))
    assert not [run for e in client.search_experiments() for run in client.search_runs([e.experiment_id])]
