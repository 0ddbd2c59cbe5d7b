"""Project hooks: a log line with the time of every stage, and a run report per run (failed and
interrupted runs included)."""

from __future__ import annotations

import importlib.metadata
import logging
import os
import platform
import signal
import subprocess
import threading
import time
from pathlib import Path

import yaml
from kedro.framework.hooks import hook_impl

from .allocator import keep_freed_memory
from .atomic_files import write_atomically

log = logging.getLogger(__name__)
# "stage <node> took <s>": Kedro's "Completed node" says as much on the console, so conf/logging.yml
# sends these to the log file only (the run report lists every stage's time).
stage_log = logging.getLogger("mom_pipeline.stages")

# Namespaces whose outputs a user opens directly (no figure, no MLflow summary): each file saved
# under data/06-08 is logged with its versioned path, and a non-empty rejection or failure report as a warning.
PATH_LOGGED_NAMESPACES = ("inverse", "inverse_example", "inverse_routes", "inverse_routes_example")
PATH_LOGGED_LAYERS = ("06_models", "07_model_output", "08_reporting")
# The reports of what a run left out: a non-empty one is a warning (what its rows are).
REPORTS_OF_LEFT_OUT = {"rejections": "observations rejected", "prescription_failures": "contexts without a prescription"}

PACKAGES = ("kedro", "kedro-datasets", "kedro-viz", "kedro-mlflow", "mlflow", "numpy", "scipy", "pandas", "cvxpy",
            "clarabel", "highspy", "scikit-learn", "matplotlib", "plotly")


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def _plain(value):
    """Parameters as YAML can write them (Kedro hands typed specs over as Pydantic models)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def git_state(project_path: str | Path) -> tuple[str, bool]:
    """(commit, whether the work tree has uncommitted changes); ("unknown", False) outside git."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=project_path, capture_output=True, text=True, timeout=30)

    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return "unknown", False
        return head.stdout.strip(), bool(git("status", "--porcelain", "--untracked-files=no").stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return "unknown", False


class ProcessSettingsHooks:
    """The process-wide settings a Kedro run works under, applied when its pipeline starts (not
    on import): glibc's malloc settings that keep freed temporaries for the next Newton step
    (`allocator.keep_freed_memory`; MOM_PIPELINE_MALLOC=default switches them off)."""

    @hook_impl
    def before_pipeline_run(self, run_params, pipeline, catalog):
        keep_freed_memory()


class RunInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM during a run. A KeyboardInterrupt, so that no `except Exception` in a
    node (a grid cell's failure, a best-effort step) takes it for a failure and carries on."""


INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


class RunReportHooks:
    """Times every stage and writes data/08_reporting/run_reports/<run id>.md (the run id is
    the save version of the run's datasets): status, git commit, parameters, package versions,
    stage timings. A stage's time runs from the start of its node until its last output is
    saved: training streams trials into the partitioned `models` dataset while it is saved.

    A failed run's report names the node and the error. SIGINT (Ctrl-C) and SIGTERM during the
    run write the report (status interrupted, the running node), attach it to the MLflow run and
    end that run KILLED at once (waiting for the tracking process to record it), then stop the run
    with RunInterrupted: Kedro calls no hook for a KeyboardInterrupt."""

    def __init__(self):
        self._started: dict[str, float] = {}
        self._unsaved: dict[str, set[str]] = {}
        self._timings: list[tuple[str, float]] = []
        self._run_started = 0.0
        self._failed_node: str | None = None
        self._previous_handlers: dict = {}
        self._run: tuple[dict, object] | None = None  # run_params and catalog while a run is on
        self._pid = os.getpid()

    @hook_impl
    def before_pipeline_run(self, run_params, pipeline, catalog):
        self._run_started = time.perf_counter()
        self._timings, self._started, self._unsaved = [], {}, {}
        self._failed_node = None
        self._run = (run_params, catalog)
        self._install_signal_handlers()

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # Python takes signals in the main thread only (e.g. a session started by a server)
        self._pid = os.getpid()
        for number in INTERRUPTS:
            self._previous_handlers[number] = signal.signal(number, self._on_signal)

    def _restore_signal_handlers(self) -> None:
        for number, handler in self._previous_handlers.items():
            signal.signal(number, handler)
        self._previous_handlers = {}

    def _on_signal(self, number, frame) -> None:
        name = signal.Signals(number).name
        if os.getpid() != self._pid:  # a forked worker of the ParallelRunner: as without the handler
            signal.signal(number, signal.SIG_DFL)
            if number == signal.SIGINT:
                raise KeyboardInterrupt
            os.kill(os.getpid(), number)
            return
        self._restore_signal_handlers()  # a second Ctrl-C acts as usual
        if self._run is not None:
            run_params, catalog = self._run
            running = ", ".join(self._started) or "between nodes"
            try:
                self._write(run_params, catalog, status=f"INTERRUPTED by {name} during {running}")
            except Exception:  # noqa: BLE001 - the run stops in any case
                log.exception("the run report of the interrupted run could not be written")
            _end_tracked_run("KILLED")
            self._run = None
        raise RunInterrupted(name)

    @hook_impl
    def before_node_run(self, node):
        self._started[node.name] = time.perf_counter()
        self._unsaved[node.name] = set(node.outputs)

    def _finish(self, name: str) -> None:
        seconds = time.perf_counter() - self._started.pop(name, time.perf_counter())
        self._unsaved.pop(name, None)
        self._timings.append((name, seconds))
        stage_log.info("stage %s took %.2f s", name, seconds)

    @hook_impl
    def after_node_run(self, node):
        if not node.outputs:
            self._finish(node.name)

    @hook_impl
    def after_dataset_saved(self, dataset_name, data, node):
        self._log_output_path(dataset_name, data)
        pending = self._unsaved.get(node.name)
        if pending is not None:
            pending.discard(dataset_name)
            if not pending:
                self._finish(node.name)

    def _log_output_path(self, dataset_name: str, data) -> None:
        namespace, _, name = dataset_name.rpartition(".")
        if namespace not in PATH_LOGGED_NAMESPACES or self._run is None or self._run[1] is None:
            return
        try:
            path = saved_path(self._run[1].get(dataset_name))
        except Exception:  # noqa: BLE001 - a log line, never a reason to fail the run
            return
        if path is None or not any(f"/{layer}/" in str(path) for layer in PATH_LOGGED_LAYERS):
            return
        if name in REPORTS_OF_LEFT_OUT and len(data):
            log.warning("%s: %d %s, listed in %s", namespace, len(data), REPORTS_OF_LEFT_OUT[name], path)
        else:
            log.info("%s: %s written to %s", namespace, name, path)

    @hook_impl
    def on_node_error(self, error, node):
        self._failed_node = self._failed_node or node.name

    @hook_impl(tryfirst=True)  # before kedro-mlflow closes the MLflow run
    def after_pipeline_run(self, run_params, pipeline, catalog):
        self._restore_signal_handlers()
        self._run = None
        self._write(run_params, catalog, status="succeeded")

    @hook_impl(tryfirst=True)
    def on_pipeline_error(self, error, run_params, pipeline, catalog):
        self._restore_signal_handlers()
        if self._run is None:
            return  # reported already (interrupted)
        self._run = None
        where = f" in {self._failed_node}" if self._failed_node else ""
        self._write(run_params, catalog, status=f"FAILED{where}: {type(error).__name__}: {error}")

    def _write(self, run_params: dict, catalog, status: str) -> None:
        from mom_pipeline.tracking import kedro_command  # (tracking imports this module)

        project = Path(run_params.get("project_path") or ".")
        run_id = run_params.get("run_id") or "unknown"
        figures = sorted({name.split(".")[0] for name, _ in self._timings if "." in name}
                         | {name.split(".")[0] for name in self._started if "." in name})
        try:
            parameters = catalog.load("parameters")
        except Exception:  # noqa: BLE001 - the report is best effort, never fails a run
            parameters = {}
        used = {fig: _plain(parameters[fig]) for fig in figures if fig in parameters}
        commit, dirty = git_state(project)
        total = time.perf_counter() - self._run_started
        lines = [f"# Run report {run_id}", "",
                 f"- status: {status}",
                 f"- run id (save version of every versioned dataset): {run_id}",
                 f"- git commit: {commit}{' (with uncommitted changes)' if dirty else ''}",
                 f"- command: `{kedro_command(run_params)}`",
                 f"- total wall time: {total:.1f} s", "", "## Stage timings", "",
                 "Each stage from the start of its node until its last output is saved.", "",
                 "| node | seconds |", "|---|---|"]
        lines += [f"| {name} | {seconds:.2f} |" for name, seconds in self._timings]
        lines += [f"| {name} | unfinished |" for name in self._started]
        lines += ["", "## Package versions", "", "| package | version |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in package_versions().items()]
        lines += ["", "## Parameters", "", "```yaml", yaml.safe_dump(used, sort_keys=False).rstrip(), "```", ""]
        out = project / "data" / "08_reporting" / "run_reports" / f"{run_id}.md"
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(out, "\n".join(lines))
        except OSError as error:  # best effort: a failed run's own error must stay the one raised
            log.warning("run report not written: %s (%s, total %.1f s)", error, status.split(":")[0], total)
            return
        level = logging.INFO if status == "succeeded" else logging.WARNING
        log.log(level, "run report written to %s (%s, total %.1f s)", out, status.split(":")[0], total)
        _log_artifact(out)


def saved_path(dataset):
    """The file a dataset has just saved (its save version's file when versioned), or None."""
    version = getattr(dataset, "_version", None)
    if version is not None and version.save:
        return dataset._get_versioned_path(version.save)
    return getattr(dataset, "_filepath", None)


def _log_artifact(path: Path) -> None:
    """Attach `path` to the run's MLflow run, if it is tracked (by the run's tracking process)."""
    from mom_pipeline.tracking_process import log_artifact

    log_artifact(path)


def _end_tracked_run(status: str) -> None:
    """End the run's MLflow run, if it is tracked, with `status` (e.g. KILLED)."""
    from mom_pipeline.tracking_process import end_run

    try:
        end_run(status)
    except Exception:  # noqa: BLE001 - the run stops in any case
        log.exception("the MLflow run could not be ended as %s", status)
