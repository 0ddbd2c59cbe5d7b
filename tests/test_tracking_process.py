"""The run's tracking process (mom_pipeline.tracking_worker) against a real MLflow store: what it
records, how a run ends when its process vanishes, messages longer than one atomic pipe write,
and messages from a forked worker process."""

import os
import select
import tempfile
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from mom_pipeline import tracking_process
from mom_pipeline.tracking import local_store, local_tracking_uri


def _config(project: Path) -> dict:
    return local_store({"tracking": {"experiment": {"name": "mom_pipeline"}, "run": {"nested": False}}}, project)


def _start(project: Path, events: list, params: dict) -> tracking_process.TrackingProcess:
    process = tracking_process.TrackingProcess(project, events.append)
    process.send("setup", config=_config(project), project_path=str(project), credentials={}, hide_default=True)
    process.send("start", run_name="online (smoke)", tags={"env": "smoke"}, params=params)
    return process


def _run(project: Path):
    client = MlflowClient(tracking_uri=local_tracking_uri(project))
    assert [e.name for e in client.search_experiments()] == ["mom_pipeline"]  # `Default` hidden
    (run,) = client.search_runs([client.get_experiment_by_name("mom_pipeline").experiment_id])
    return client, run


@pytest.mark.slow  # a tracking process: a second interpreter importing MLflow (3.5-5.5 CPU-s)
def test_a_run_is_recorded_with_every_parameter_and_its_artifacts(tmp_path):
    params = {f"fig5.experiment.p{i:03d}": str(i) for i in range(250)}  # > PIPE_BUF, three log_batch calls
    assert len(repr(params)) > select.PIPE_BUF
    events = []
    process = _start(tmp_path, events, params)
    report = tmp_path / "report.md"
    report.write_text("# report")
    tracking_process.current = process
    try:
        if (child := os.fork()) == 0:  # a forked worker of a ParallelRunner hands over an artifact
            tracking_process.log_artifact(report, artifact_path="fig5")
            os._exit(0)
        assert os.waitpid(child, 0)[1] == 0
        tracking_process.log_artifact(report)
        process.send("dataset_save", name="metrics", data={"online.regret": {"value": 0.25, "step": 0}},
                     config={"type": "kedro_mlflow.io.metrics.MlflowMetricsHistoryDataset", "prefix": "fig5"})
        tracking_process.end_run("FINISHED")
    finally:
        tracking_process.current = None
    client, run = _run(tmp_path)
    assert run.info.status == "FINISHED" and run.data.params == params
    assert run.data.tags["env"] == "smoke" and run.data.tags["mlflow.runName"] == "online (smoke)"
    assert run.data.tags["git_commit"]
    assert run.data.tags["mlflow.source.name"] == "kedro"  # not the tracking process's "-c"
    assert run.data.metrics == {"fig5.online.regret": 0.25}
    assert {a.path for a in client.list_artifacts(run.info.run_id)} == {"fig5", "report.md"}
    assert [a.path for a in client.list_artifacts(run.info.run_id, "fig5")] == ["fig5/report.md"]
    assert [e["event"] for e in events] == ["started", "ended"]
    assert not list(Path(tempfile.gettempdir()).glob("mom-tracking-*.json"))  # the long message's file is gone


@pytest.mark.slow  # a tracking process: a second interpreter importing MLflow (3.5-5.5 CPU-s)
def test_a_run_whose_process_is_gone_ends_killed(tmp_path):
    events = []
    process = _start(tmp_path, events, {"a": "1"})
    process._process.stdin.close()  # as when the run's process is killed (SIGKILL): no `end`
    process._process.wait(timeout=300)
    _, run = _run(tmp_path)
    assert run.info.status == "KILLED" and run.data.params == {"a": "1"}


@pytest.mark.slow  # a tracking process: a second interpreter importing MLflow (3.5-5.5 CPU-s)
def test_a_store_that_cannot_be_used_is_said_once(tmp_path):
    (tmp_path / "mlflow.db").write_bytes(b"not a database" * 100)
    events = []
    process = _start(tmp_path, events, {"a": "1"})
    process.send("artifact", path=str(tmp_path / "missing.md"), artifact_path=None)
    process.finish("FINISHED")
    (event,) = events
    assert event["event"] == "off" and event["store"] and event["error"].startswith("DatabaseError")
    assert event["uri"] == local_tracking_uri(tmp_path)


def test_a_dataset_saved_outside_a_tracked_run_logs_nothing(caplog):
    dataset = tracking_process.TrackingProcessDataset(
        {"type": "kedro_mlflow.io.metrics.MlflowMetricsHistoryDataset", "prefix": "fig5"})
    with caplog.at_level("WARNING"):
        dataset.save({"x": {"value": 1.0, "step": 0}})
        dataset.save({"x": {"value": 1.0, "step": 0}})
    assert len([r for r in caplog.records if "is not logged to MLflow" in r.getMessage()]) == 1
    assert dataset._describe()["prefix"] == "fig5"


@pytest.fixture(autouse=True)
def _no_tracked_run():
    yield
    tracking_process.current = None
    tracking_process.untracked_because = None
