"""The tracking process of a `kedro run`: everything MLflow does for the run, in a process of its
own (started by `mom_pipeline.tracking.TrackingHooks`), so that importing MLflow (2-3 s) and
opening its store never delay the run's first node, and the run's own process holds no MLflow
thread or lock when it starts worker processes.

It reads one JSON message per line on stdin and answers with JSON lines on the file descriptor
named by its last argument (stdout and stderr stay the run's: MLflow's own messages):

- `setup`: the run's kedro-mlflow configuration (mlflow.yml); kedro-mlflow's own set-up of the
  store and the experiment (`KedroMlflowConfig.setup`);
- `start`: the MLflow run, its name, tags and every parameter (log_batch, 100 per call);
- `artifact`: a file the run has written, attached under `artifact_path`;
- `dataset_save`: a kedro-mlflow dataset of the catalog (e.g. the figures' metrics) saved here,
  by the plugin's own class, into the run;
- `end`: the run ends with the status given (FINISHED, FAILED, KILLED), or no run was started.

When stdin closes without `end` the run's process is gone (e.g. SIGKILL): a started run ends
KILLED. SIGINT is ignored: Ctrl-C reaches the run's process, which says how the run ended.
A store that cannot be used is answered by `{"event": "off", ...}` once; later messages are
then ignored (the run goes on untracked, and its process says so).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import traceback
from pathlib import Path

#: MLflow takes at most 100 parameters per log_batch call.
PARAMS_PER_BATCH = 100


def hide_empty_default_experiment(client) -> None:
    """MLflow creates an experiment `Default` (id 0) in every new database; the project logs into
    its own, so an empty `Default` is marked deleted (the UI then lists one experiment)."""
    default = client.get_experiment("0")
    if default.lifecycle_stage == "active" and not client.search_runs(["0"], max_results=1, run_view_type=3):
        client.delete_experiment("0")


def store_errors() -> tuple:
    """The exceptions by which MLflow says its store cannot be used (SQLAlchemy's and sqlite's
    for a database, MLflow's own for a server, OSError for a full or read-only disk)."""
    import sqlite3

    from mlflow.exceptions import MlflowException

    errors = (MlflowException, sqlite3.Error, OSError)
    try:
        from sqlalchemy.exc import SQLAlchemyError
    except ImportError:
        return errors
    return (*errors, SQLAlchemyError)


class _Context:
    """What kedro-mlflow's `KedroMlflowConfig.setup` reads of a KedroContext."""

    def __init__(self, project_path: str, credentials: dict):
        self.project_path = Path(project_path)
        self._credentials = credentials

    def _get_config_credentials(self) -> dict:
        return self._credentials


class RunTracker:
    """The MLflow side of one `kedro run`; each method is one message of the module docstring."""

    def __init__(self, reply):
        self._reply = reply
        self.config = None
        self.project_path = "."
        self.run_id = None
        self.off = False
        self._datasets: dict[str, object] = {}

    def setup(self, config: dict, project_path: str, credentials: dict | None = None, hide_default: bool = False):
        from kedro_mlflow.config.kedro_mlflow_config import KedroMlflowConfig

        self.project_path = project_path
        self.config = KedroMlflowConfig.model_validate(config)
        self.config.setup(_Context(project_path, credentials or {}))
        if hide_default:
            hide_empty_default_experiment(self.config.server._mlflow_client)

    def start(self, run_name: str, tags: dict, params: dict):
        import mlflow
        from mlflow.entities import Param

        from mom_pipeline.hooks import git_state

        commit, dirty = git_state(self.project_path)
        # MLflow would name this process's own command ("-c") as the run's source in the UI's
        # Source column: the run's is `kedro` (the exact command line is the kedro_command tag).
        tags = {"mlflow.source.name": "kedro", **tags, "git_commit": commit, "git_dirty": str(dirty).lower()}
        run = self.config.tracking.run
        mlflow.start_run(run_id=run.id, experiment_id=self.config.tracking.experiment._experiment.experiment_id,
                         run_name=run_name, nested=run.nested, tags=tags)
        self.run_id = mlflow.active_run().info.run_id
        client = self.config.server._mlflow_client
        items = [Param(key, value) for key, value in params.items()]
        for start in range(0, len(items), PARAMS_PER_BATCH):
            client.log_batch(self.run_id, params=items[start:start + PARAMS_PER_BATCH], synchronous=True)
        self._reply({"event": "started", "run_id": self.run_id})

    def artifact(self, path: str, artifact_path: str | None = None):
        if self.run_id is None:
            return
        import mlflow

        mlflow.log_artifact(path, artifact_path=artifact_path)

    def dataset_save(self, name: str, config: dict, data):
        if self.run_id is None:
            return
        from kedro.io import AbstractDataset

        if name not in self._datasets:
            self._datasets[name] = AbstractDataset.from_config(name, config)
        self._datasets[name].save(data)

    def end(self, status: str | None):
        if self.run_id is None:
            return
        import mlflow

        while mlflow.active_run() is not None:
            mlflow.end_run(status)
        self._reply({"event": "ended", "status": status})
        self.run_id = None

    def fail(self, error: Exception):
        """Tracking off for the rest of the run: said once (the run's process warns), the
        started run (if any) ends FAILED where the store still takes it."""
        if self.off:
            return
        self.off = True
        store = isinstance(error, store_errors())
        if not store:
            traceback.print_exception(error, file=sys.stderr)
        uri = self.config.server.mlflow_tracking_uri if self.config is not None else None
        first_line = (str(error).splitlines() or [""])[0]
        self._reply({"event": "off", "error": f"{type(error).__name__}: {first_line}", "uri": uri, "store": store})
        try:
            self.end("FAILED")
        except Exception:  # noqa: BLE001 - the store cannot record the run's end
            self.run_id = None


def _messages(stream):
    for line in stream:
        message = json.loads(line)
        if message.get("op") == "file":  # too long for one atomic write to the pipe
            path = Path(message["path"])
            message = json.loads(path.read_text())
            path.unlink()
        yield message


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(5)  # on a busy machine the run's own nodes come first; the tracking waits its turn
    logging.basicConfig(level=logging.WARNING, format="tracking process: %(levelname)s %(name)s: %(message)s")
    import kedro.framework.project  # noqa: F401 - Kedro's logging set-up (tracking_logging.yml) before MLflow's
    replies = open(int(sys.argv[-1]), "w")  # noqa: SIM115 - open until the process ends

    def reply(event: dict) -> None:
        replies.write(json.dumps(event) + "\n")
        replies.flush()

    tracker = RunTracker(reply)
    ended = False
    for message in _messages(sys.stdin):
        op = message.pop("op")
        if not tracker.off:
            try:
                getattr(tracker, op)(**message)
            except Exception as error:  # noqa: BLE001 - tracking stops; the run goes on
                tracker.fail(error)
        if op == "end":
            ended = True
            break
    if not ended and not tracker.off:  # the run's process is gone without saying how its run ended
        try:
            tracker.end("KILLED")
        except Exception:  # noqa: BLE001 - nothing to tell: that process is gone
            pass
    # Everything is recorded (MLflow's calls here are synchronous): the interpreter's own shutdown,
    # 2-3 s of tearing down MLflow's modules on a loaded machine, would only keep the run waiting.
    for stream in (replies, sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
