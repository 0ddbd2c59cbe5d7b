"""The run's side of its tracking process (`mom_pipeline.tracking_worker`): start it, hand it
messages, hear what it says. The run's process imports no MLflow and runs no thread for it.

A message is one JSON line written to the process's stdin with a single `os.write`: up to
PIPE_BUF bytes that write is atomic, so the forked workers of a ParallelRunner (which inherit
the pipe) can hand over artifacts and dataset saves beside the run's own process; a longer
message goes through a file whose name is sent instead. `os.write` also takes no lock, so a
signal handler may send while the interrupted code was sending.
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from kedro.io import AbstractDataset

log = logging.getLogger("mom_pipeline.tracking")

# Seconds the run waits, when it ends, for its tracking process to record the end (it may still
# be importing MLflow on a loaded machine, and then logs the run's artifacts and metrics).
END_TIMEOUT = 600
_SOURCE = str(Path(__file__).resolve().parents[1])  # this package's folder: the same code runs there
_WORKER = "import sys; sys.path.insert(0, sys.argv[1]); from mom_pipeline.tracking_worker import main; sys.exit(main())"


class TrackingProcess:
    """One run's tracking process. `on_event` is called with each event it answers
    ({"event": "off" | "started" | "ended", ...}) when the run's process reads them."""

    def __init__(self, cwd: Path, on_event):
        read, write = os.pipe()
        # Its own session: a Ctrl-C in the terminal reaches only the run, which ends it KILLED.
        # (With Linux's autogroup scheduling a session also takes its CPU share beside the run's
        # rather than out of it: the run's own process group measured 1.69x a bare run's whole
        # command time on a loaded machine, its own session 1.21x, decision record 023.)
        # MLflow's INFO lines (a new store's tables, ...) would interleave with the run's console.
        env = {**os.environ, "MLFLOW_LOGGING_LEVEL": os.environ.get("MLFLOW_LOGGING_LEVEL", "WARNING"),
               "KEDRO_LOGGING_CONFIG": str(Path(__file__).with_name("tracking_logging.yml"))}
        self._process = subprocess.Popen([sys.executable, "-c", _WORKER, _SOURCE, str(write)], cwd=cwd, env=env,
                                         stdin=subprocess.PIPE, pass_fds=(write,), start_new_session=True)
        os.close(write)
        self._events = read
        self._pending = b""
        self._on_event = on_event
        self._owner = os.getpid()
        self.gone = False
        self._finished = False

    def send(self, op: str, **fields) -> None:
        if self.gone:
            return
        data = (json.dumps({"op": op, **fields}, default=_plain_number) + "\n").encode()
        if len(data) > select.PIPE_BUF:
            fd, name = tempfile.mkstemp(prefix="mom-tracking-", suffix=".json")
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            data = (json.dumps({"op": "file", "path": name}) + "\n").encode()
        try:
            os.write(self._process.stdin.fileno(), data)
        except OSError as error:  # the process is gone (it failed): the run goes on untracked
            self.gone = True
            log.warning("MLflow tracking stopped: the tracking process is gone (%s)", error)

    def poll(self, timeout: float = 0.0) -> None:
        """Hand every event answered so far to `on_event` (waiting up to `timeout` s for one)."""
        if os.getpid() != self._owner or threading.current_thread() is not threading.main_thread():
            return  # a forked worker, or a ThreadRunner's thread: the events are the main thread's to read
        while select.select([self._events], [], [], timeout)[0]:
            chunk = os.read(self._events, 65536)
            if not chunk:
                break
            self._pending += chunk
            *lines, self._pending = self._pending.split(b"\n")
            for line in lines:
                self._on_event(json.loads(line))
            timeout = 0.0

    def finish(self, status: str | None, timeout: float = END_TIMEOUT) -> None:
        """End the run with `status` (None: no run was started) and wait until the process has
        recorded it and exited."""
        if os.getpid() != self._owner or self._finished:
            return
        self._finished = True
        self.send("end", status=status)
        try:
            self._process.stdin.close()
        except OSError:
            pass
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("the MLflow run was not ended as %s within %d s: its tracking process is stopped", status,
                        timeout)
            self._process.kill()
            self._process.wait()
        self.poll()
        os.close(self._events)
        self.gone = True


def _plain_number(value):
    """numpy scalars (a metric's value) as JSON numbers."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} cannot be sent to the tracking process")


#: The tracking process of the session's run; None while no run is tracked.
current: TrackingProcess | None = None
#: Why the session's run is not tracked (None: it is, or no session has started one here).
untracked_because: str | None = None


def end_run(status: str) -> None:
    """End the tracked run with `status` (an interrupted run: KILLED) and wait until it is recorded."""
    global current
    process, current = current, None
    if process is not None:
        process.finish(status)


def log_artifact(path: str | Path, artifact_path: str | None = None) -> None:
    """Attach the file at `path` to the run, under `artifact_path`, when the run is tracked."""
    if current is not None:
        current.send("artifact", path=str(path), artifact_path=artifact_path)


class TrackingProcessDataset(AbstractDataset):
    """A kedro-mlflow dataset (`dataset:`, e.g. MlflowMetricsHistoryDataset for a figure's
    metrics) saved by the plugin's own class in the run's tracking process, into the run: the
    run's process never imports MLflow for it. Saved outside a tracked run it logs nothing, as
    the plugin's dataset does when tracking is off. Loading (kedro-viz, a notebook) builds the
    plugin's dataset here."""

    def __init__(self, dataset: dict, metadata: dict | None = None):
        self._config = dict(dataset)
        self.metadata = metadata
        self._name = f"{self._config.get('type')}:{self._config.get('prefix')}"
        self._warned = False

    def _save(self, data) -> None:
        if current is not None:
            current.send("dataset_save", name=self._name, config=self._config, data=data)
        elif untracked_because is None and not self._warned:  # e.g. a spawned worker process
            self._warned = True
            log.warning("%s is not logged to MLflow: saved outside the tracked run's process", self._name)

    def _load(self):
        return AbstractDataset.from_config(self._name, self._config).load()

    def _describe(self) -> dict:
        return dict(self._config)
