"""A run killed with SIGKILL resumes from its finished trials; runners and backends agree."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project
from kedro.runner import ParallelRunner, SequentialRunner

KEDRO = str(Path(sys.executable).parent / "kedro")
ENV = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "true", "MOM_PROGRESS": "0"}


def _latest(folder: Path) -> Path:
    return sorted(p for p in folder.iterdir() if p.is_dir())[-1] / folder.name


def _evaluation(project: Path) -> pd.DataFrame:
    table = pd.read_parquet(_latest(project / "data" / "07_model_output" / "fig1" / "evaluation.parquet"))
    return table.drop(columns="fit_seconds")  # wall-clock times differ from run to run


def _command(checkpoints: Path) -> list[str]:
    return [KEDRO, "run", "--env=smoke", "--pipelines=shortest_path", "--namespaces=fig1", "--params",
            f"compute.checkpoint_dir={checkpoints},fig1.experiment.trials=6"]


def test_sigkill_then_resume(project_copy):
    checkpoints = project_copy / "checkpoints"
    process = subprocess.Popen(_command(checkpoints), cwd=project_copy, env=ENV, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and process.poll() is None:
        if len(list(checkpoints.glob("fig1/*.pkl"))) >= 2:
            break
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before it could be killed"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    finished = sorted(p.name for p in (checkpoints / "fig1").glob("*.pkl"))
    assert 2 <= len(finished) < 12  # killed mid-run: some trials finished, not all
    assert not (project_copy / "data" / "07_model_output" / "fig1").exists()  # nothing downstream written

    resumed = subprocess.run(_command(checkpoints), cwd=project_copy, env=ENV, capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert (resumed.stdout + resumed.stderr).count("reusing finished trial") >= len(finished)
    assert len(list((checkpoints / "fig1").glob("*.pkl"))) == 12  # 2 settings x 6 trials

    # the resumed run's numbers equal a fresh run's, sample for sample
    resumed_table = _evaluation(project_copy)
    fresh = subprocess.run(_command(project_copy / "fresh_checkpoints"), cwd=project_copy, env=ENV,
                           capture_output=True, text=True, timeout=600)
    assert fresh.returncode == 0
    pd.testing.assert_frame_equal(resumed_table, _evaluation(project_copy))


def test_parallel_runner_equals_sequential_runner(project_copy):
    bootstrap_project(project_copy)
    tables = []
    for runner in (SequentialRunner(), ParallelRunner(max_workers=2)):
        with KedroSession.create(project_path=project_copy, env="smoke") as session:
            session.run(pipeline_names=["shortest_path"], namespaces=["fig1"], runner=runner)
        tables.append(_evaluation(project_copy))
    pd.testing.assert_frame_equal(tables[0], tables[1])


def test_dask_backend_equals_sequential_evaluation(project_copy):
    distributed = __import__("pytest").importorskip("distributed")
    bootstrap_project(project_copy)
    with KedroSession.create(project_path=project_copy, env="smoke") as session:
        session.run(pipeline_names=["shortest_path"], namespaces=["fig1"])
    sequential = _evaluation(project_copy)
    with distributed.LocalCluster(host="127.0.0.1", n_workers=2, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        runtime = {"compute": {"backend": "dask", "n_jobs": 2, "dask_address": cluster.scheduler_address}}
        with KedroSession.create(project_path=project_copy, env="smoke", runtime_params=runtime) as session:
            session.run(pipeline_names=["shortest_path"], namespaces=["fig1"])
    pd.testing.assert_frame_equal(sequential, _evaluation(project_copy))
