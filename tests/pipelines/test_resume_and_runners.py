"""A run killed with SIGKILL resumes from its finished trials; runners and backends agree."""

import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project
from kedro.runner import ParallelRunner

KEDRO = str(Path(sys.executable).parent / "kedro")
ENV = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "true", "MOM_PROGRESS": "0"}


def _latest(folder: Path) -> Path:
    return sorted(p for p in folder.iterdir() if p.is_dir())[-1] / folder.name


def _evaluation(project: Path) -> pd.DataFrame:
    table = pd.read_parquet(_latest(project / "data" / "07_model_output" / "fig1" / "evaluation.parquet"))
    return table.drop(columns="fit_seconds")  # wall-clock times differ from run to run


def _command(*params: str) -> list[str]:
    return [KEDRO, "run", "--env=smoke", "--pipelines=shortest_path", "--namespaces=fig1", "--params",
            ",".join(["fig1.experiment.trials=4", "compute.backend=loky", "compute.n_jobs=2", *params])]


def test_sigkill_then_resume(project_copy, caplog):
    """Issue 12 item 10: a SIGKILL of the main process (loky workers) leaves no worker behind,
    and the resumed run says on the console which trials it reuses."""
    import psutil

    trials = project_copy / "data" / "06_models" / "fig1" / "trials"
    process = subprocess.Popen(_command(), cwd=project_copy, env=ENV, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    main = psutil.Process(process.pid)
    workers: set = set()
    deadline = time.time() + 300
    while time.time() < deadline and process.poll() is None:
        try:
            workers |= set(main.children(recursive=True))
        except psutil.Error:
            pass
        if len(list(trials.glob("*.pkl"))) >= 2:
            break
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before it could be killed"
    assert workers, "no worker process was seen"
    os.kill(process.pid, signal.SIGKILL)  # the main process only, as an out-of-memory killer would
    process.wait()
    gone, alive = psutil.wait_procs(list(workers), timeout=20)
    assert not alive, f"workers outlived the main process: {alive}"
    finished = sorted(p.name for p in trials.glob("*.pkl"))
    assert 2 <= len(finished) < 8  # killed mid-run: some trials finished, not all
    assert not (project_copy / "data" / "07_model_output" / "fig1").exists()  # nothing downstream written

    resumed = subprocess.run(_command(), cwd=project_copy, env=ENV, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    (reused,) = re.findall(r"fig1: reusing finished trials?: (\d+) of 8, from ", resumed.stdout + resumed.stderr)
    assert int(reused) >= len(finished)  # one line for the figure, not one per trial
    assert len(list(trials.glob("*.pkl"))) == 8  # 2 settings x 4 trials
    assert not list(trials.glob(".*.tmp"))

    # the resumed run's numbers equal a fresh run's, sample for sample (keep_models=all: other
    # files, so nothing is reused; the stored forests' predictions are the same). The fresh run
    # is a reference, not the command under test: a session in this process, one trial after
    # another (no second interpreter and worker pool to start; every backend gives the same numbers).
    resumed_table = _evaluation(project_copy)
    bootstrap_project(project_copy)
    fresh = {"fig1": {"experiment": {"trials": 4}}, "storage": {"keep_models": "all"}}
    with KedroSession.create(project_path=project_copy, env="smoke", runtime_params=fresh) as session:
        with caplog.at_level(logging.INFO):
            session.run(pipeline_names=["shortest_path"], namespaces=["fig1"])
    assert "reusing finished trial" not in caplog.text and "fig1" in caplog.text
    fresh_table = _evaluation(project_copy)
    pd.testing.assert_frame_equal(resumed_table, fresh_table)


def test_parallel_runner_equals_sequential_runner(fig1_project):
    """fig1_project: after a run by the SequentialRunner."""
    sequential = _evaluation(fig1_project)
    bootstrap_project(fig1_project)
    with KedroSession.create(project_path=fig1_project, env="smoke") as session:
        session.run(pipeline_names=["shortest_path"], namespaces=["fig1"], runner=ParallelRunner(max_workers=2))
    pd.testing.assert_frame_equal(sequential, _evaluation(fig1_project))


def test_dask_backend_equals_sequential_evaluation(fig1_project):
    """fig1_project: after a run by the smoke environment's sequential backend."""
    distributed = __import__("pytest").importorskip("distributed")
    project_copy = fig1_project
    sequential = _evaluation(project_copy)
    bootstrap_project(project_copy)
    with distributed.LocalCluster(host="127.0.0.1", n_workers=2, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        runtime = {"compute": {"backend": "dask", "n_jobs": 2, "dask_address": cluster.scheduler_address}}
        with KedroSession.create(project_path=project_copy, env="smoke", runtime_params=runtime) as session:
            session.run(pipeline_names=["shortest_path"], namespaces=["fig1"])
    pd.testing.assert_frame_equal(sequential, _evaluation(project_copy))
