"""A run stopped by SIGINT or SIGTERM, or by a failing node, says so: its run report carries the
status and the node, and its MLflow run ends KILLED or FAILED (never FINISHED); the MLflow run's
tags give the exact command, the env, the commit; one parameter per leaf; one experiment."""

import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project
from mlflow.tracking import MlflowClient

from mom_pipeline.pipelines.experiment import nodes
from mom_pipeline.tracking import kedro_command, local_tracking_uri

KEDRO = str(Path(sys.executable).parent / "kedro")
ENV = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "true", "MOM_PROGRESS": "0"}
# Enough online trials that the run is still in `run_online` when the signal comes.
COMMAND = [KEDRO, "run", "--env=smoke", "--pipelines=online", "--params", "fig5.experiment.trials=500"]


def _only_run(project: Path):
    client = MlflowClient(tracking_uri=local_tracking_uri(project))
    experiments = client.search_experiments()  # active ones: what the UI lists
    assert [e.name for e in experiments] == ["mom_pipeline"]
    (run,) = client.search_runs([experiments[0].experiment_id])
    return client, run


def _report(project: Path, run) -> str:
    return (project / "data" / "08_reporting" / "run_reports" / f"{run.data.tags['kedro_run_id']}.md").read_text()


def _wait_for(process, text: str, timeout: float = 600) -> list[str]:
    """Lines of the process's output up to the first one containing `text`."""
    lines = []
    timer = threading.Timer(timeout, process.kill)  # a hung start-up must not hang the suite
    timer.start()
    try:
        for line in process.stdout:
            lines.append(line)
            if text in line:
                return lines
    finally:
        timer.cancel()
    raise AssertionError(f"{text!r} never printed:\n{''.join(lines[-40:])}")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_is_reported_and_killed(project_copy, sig):
    process = subprocess.Popen(COMMAND, cwd=project_copy, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    try:
        _wait_for(process, "fig5: online: trial 1/500 done")
        process.send_signal(sig)
        output, _ = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode != 0, output[-3000:]
    client, run = _only_run(project_copy)
    assert run.info.status == "KILLED"
    report = _report(project_copy, run)
    assert f"- status: INTERRUPTED by {sig.name} during fig5.run_online" in report
    assert "| fig5.run_online | unfinished |" in report
    assert f"{run.data.tags['kedro_run_id']}.md" in {a.path for a in client.list_artifacts(run.info.run_id)}
    # what the run was started with, exactly, and every parameter although no node finished
    assert run.data.tags["kedro_command"] == "kedro run --env=smoke --pipelines=online --params fig5.experiment.trials=500"
    assert run.data.params["fig5.experiment.trials"] == "500"
    assert not (project_copy / "data" / "07_model_output" / "fig5").exists()


def test_a_failing_node_is_reported_and_the_run_failed(project_copy, monkeypatch):
    def broken_summary(steps):
        raise RuntimeError("summary broke")

    monkeypatch.setattr(nodes, "online_summary", broken_summary)
    bootstrap_project(project_copy)
    with pytest.raises(RuntimeError, match="summary broke"):
        with KedroSession.create(project_path=project_copy, env="smoke",
                                 runtime_params={"fig5": {"experiment": {"trials": 1}}}) as session:
            session.run(pipeline_names=["online"])
    client, run = _only_run(project_copy)
    assert run.info.status == "FAILED"
    assert "- status: FAILED in fig5.report_online: RuntimeError: summary broke" in _report(project_copy, run)
    tags = run.data.tags
    assert tags["kedro_command"] == "kedro run --env=smoke --pipelines=online --params=fig5.experiment.trials=1"
    assert tags["env"] == "smoke" and tags["mlflow.runName"] == "online (smoke)"
    assert tags["runner"] == "SequentialRunner" and "run_id" not in tags and tags["kedro_run_id"]
    assert tags["git_dirty"] in ("true", "false") and tags["git_commit"]
    # one parameter per leaf: no typed spec logged whole beside its flattened keys
    params = run.data.params
    assert params["compute.backend"] == "sequential" and params["fig5.experiment.trials"] == "1"
    assert not [key for key in params if any(other.startswith(f"{key}.") for other in params)]


def test_the_command_tag_is_the_command_line():
    run_params = {"env": "smoke", "pipeline_names": ["online"], "runtime_params": {"fig5": {"experiment": {"trials": 2}}}}
    assert kedro_command(run_params, ["/venv/bin/kedro", "run", "--env=smoke", "--pipelines", "online"]) == \
        "kedro run --env=smoke --pipelines online"
    assert kedro_command(run_params, ["/x/site-packages/kedro/__main__.py", "run"]) == "kedro run"
    assert kedro_command(run_params, ["pytest"]) == "kedro run --env=smoke --pipelines=online --params=fig5.experiment.trials=2"
    assert kedro_command({"pipeline_names": ["__default__"]}, ["ipykernel"]) == "kedro run"


def test_each_project_copy_keeps_its_own_store(project_copy, tmp_path_factory):
    """MLflow exports the tracking URI it is given; a second project run in the same process (a
    notebook, the tests) must still track into its own store, and leave the variable unset."""
    other = tmp_path_factory.mktemp("other")
    shutil.copytree(project_copy, other, dirs_exist_ok=True)
    for project in (project_copy, other):
        bootstrap_project(project)
        with KedroSession.create(project_path=project, env="smoke",
                                 runtime_params={"fig5": {"experiment": {"trials": 1}}}) as session:
            session.run(pipeline_names=["online"])
        assert "MLFLOW_TRACKING_URI" not in os.environ
        _, run = _only_run(project)
        assert run.info.status == "FINISHED" and run.data.tags["project_path"] == str(project)
