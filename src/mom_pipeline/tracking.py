"""Experiment tracking with MLflow: kedro-mlflow's hook (one MLflow run per `kedro run`), with
the project's corrections. settings.py registers `TrackingHooks` in place of the plugin's own
instance (DISABLE_HOOKS_FOR_PLUGINS), so every correction is made where the plugin does the thing:

- the store: the plugin's `server.mlflow_tracking_uri` and `create_experiment_kwargs.artifact_location`
  (conf/base/mlflow.yml); when both it and MLFLOW_TRACKING_URI are unset, the config loader fills in
  the project's own store, `sqlite:///<project>/mlflow.db` with artifacts in `<project>/mlartifacts/`
  (`local_store`); MLflow's empty `Default` experiment of a new local store is hidden;
- the run's name is `<pipelines> (<env>)` unless mlflow.yml names it;
- tags: the exact command (`kedro_command`, from the command line), the env, the Kedro run id
  (= the save version of every versioned dataset of the run), the git commit and whether the work
  tree had uncommitted changes; the plugin's tags made readable (runner by class name, lists joined)
  and its copy of the run id dropped;
- parameters: one per leaf, all logged when the run starts (the plugin logs the ones each node
  reads, and typed specs, which Kedro hands over as Pydantic models, as one repr string);
- a run stopped by SIGINT/SIGTERM ends KILLED (hooks.RunReportHooks ends it), a failed one FAILED;
- every figure's summaries and figures (the versioned files just saved) as artifacts under `<figure>/`;
- a store that cannot be used (a corrupt, locked or full `mlflow.db`, a server out of reach) turns
  tracking off for the run through the plugin's own switch (`disable_tracking.pipelines`, which
  also stops the catalog's MLflow datasets from logging), with one warning that names the store
  and the remedy; the run itself goes on (`ProjectMlflowHook._tracking_off`);
- start-up: MLflow's import (seconds), the store's set-up, the start of the run and its tags and
  parameters happen on a tracking thread while the nodes run; a hook that logs in the run (an
  MLflow dataset's save, an artifact, the run's end or interruption) waits for that thread first.

The corrections themselves are in `mlflow_hook.ProjectMlflowHook` (that module imports MLflow);
this module stays light enough for settings.py.
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path

from kedro.framework.hooks import hook_impl

log = logging.getLogger(__name__)


#: The environment a run without --env uses (settings.py's CONFIG_LOADER_ARGS takes it from here).
DEFAULT_RUN_ENV = "local"


LOCAL_STORE = "mlflow.db"
LOCAL_ARTIFACTS = "mlartifacts"
# Outputs of every figure's reporting stage that become artifacts of the run.
TRACKED_OUTPUTS = ("summary_table", "summary_markdown", "figure", "figure_plotly")
# The plugin tags every truthy run parameter; these are said better elsewhere (the command, the
# parameters) or duplicate a tag (`run_id` is `kedro_run_id`).
REDUNDANT_PLUGIN_TAGS = ("run_id", "runtime_params", "extra_params")


def local_tracking_uri(project_path: str | Path) -> str:
    return f"sqlite:///{(Path(project_path).resolve() / LOCAL_STORE).as_posix()}"


def local_store(config: dict, project_path: str | Path) -> dict:
    """The mlflow config with the project's local store filled in where neither mlflow.yml nor
    MLFLOW_TRACKING_URI names one (a team's shared server keeps its own artifact root)."""
    server = dict(config.get("server") or {})
    if server.get("mlflow_tracking_uri") or os.environ.get("MLFLOW_TRACKING_URI"):
        return config
    server["mlflow_tracking_uri"] = local_tracking_uri(project_path)
    tracking = dict(config.get("tracking") or {})
    experiment = dict(tracking.get("experiment") or {})
    create = dict(experiment.get("create_experiment_kwargs") or {})
    if not create.get("artifact_location"):
        create["artifact_location"] = (Path(project_path).resolve() / LOCAL_ARTIFACTS).as_uri()
    return {**config, "server": server,
            "tracking": {**tracking, "experiment": {**experiment, "create_experiment_kwargs": create}}}


def flatten_parameters(prefix: str, value) -> dict[str, str]:
    """`value` (a typed spec, a mapping or a plain value) as MLflow parameters `prefix.key...`."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out.update(flatten_parameters(f"{prefix}.{key}", item))
        return out
    from mom_pipeline.reporting.tables import metric_name

    return {metric_name(prefix): str(value)[:6000]}  # MLflow's names ('SPO+' -> 'SPOplus') and length limit


def _cli_words(values) -> str:
    return ",".join(values) if isinstance(values, (list, tuple)) else str(values)


def kedro_command(run_params: dict, argv: list[str] | None = None) -> str:
    """The command that started the run: the command line itself under `kedro` (or `python -m
    kedro` / `python -m mom_pipeline`), else (a session in a notebook or a test) the `kedro run`
    that does the same."""
    argv = sys.argv if argv is None else argv
    program = Path(argv[0]).name if argv else ""
    parent = Path(argv[0]).parent.name if argv else ""
    if program == "kedro" or (program == "__main__.py" and parent in ("kedro", "mom_pipeline")):
        return shlex.join(["kedro", *argv[1:]])
    words = ["kedro", "run"]
    flags = {"env": "--env", "pipeline_names": "--pipelines", "namespaces": "--namespaces", "tags": "--tags",
             "node_names": "--nodes", "from_nodes": "--from-nodes", "to_nodes": "--to-nodes",
             "from_inputs": "--from-inputs", "to_outputs": "--to-outputs"}
    for key, flag in flags.items():
        value = run_params.get(key)
        if value and value != ["__default__"]:
            words.append(f"{flag}={_cli_words(value)}")
    if run_params.get("load_versions"):
        words.append("--load-versions=" + ",".join(f"{k}:{v}" for k, v in run_params["load_versions"].items()))
    runtime = flatten_parameters("", run_params.get("runtime_params") or {})
    if runtime:
        words.append("--params=" + ",".join(f"{k.lstrip('.')}={v}" for k, v in runtime.items()))
    return shlex.join(words)


def run_env(run_params: dict) -> str:
    """The run's configuration environment (Kedro's default when none was given)."""
    return run_params.get("env") or DEFAULT_RUN_ENV


def hide_empty_default_experiment(client) -> None:
    """MLflow creates an experiment `Default` (id 0) in every new database; the project logs into
    its own, so an empty `Default` is marked deleted (the UI then lists one experiment)."""
    default = client.get_experiment("0")
    if default.lifecycle_stage == "active" and not client.search_runs(["0"], max_results=1, run_view_type=3):
        client.delete_experiment("0")


def _runner_name(runner) -> str:
    """The runner's class name: Kedro hands it over as an object's repr ("<kedro.runner....
    SequentialRunner object at 0x..>"), or "None" for a session's default runner."""
    text = str(runner)
    if text in ("None", ""):
        return "SequentialRunner"
    return text.split()[0].rsplit(".", 1)[-1] if text.startswith("<") else text


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


def store_remedy(uri: str) -> str:
    """What to do about a tracking store at `uri` that cannot be used."""
    if uri.startswith("sqlite:///"):
        path = uri.removeprefix("sqlite:///")
        return (f"if another process holds it (`kedro mlflow ui`, another run), run again when it is done; if "
                f"the disk is full, free space; if it is damaged, move it aside (mv {path} {path}.broken): the next "
                "run starts a new store")
    return ("check that the tracking server answers (server.mlflow_tracking_uri in conf/*/mlflow.yml or "
            "MLFLOW_TRACKING_URI)")


#: kedro-mlflow's entry point for its hook. TrackingHooks is registered under this name, so Kedro
#: does not load (import) the plugin's own hook, which it would then unregister
#: (settings.DISABLE_HOOKS_FOR_PLUGINS): a run imports MLflow on the tracking thread only.
PLUGIN_ENTRY_POINT = "mlflow_hook"

def is_mlflow_dataset(catalog, name: str) -> bool:
    """Whether the catalog's `name` is one of kedro-mlflow's datasets (without creating it)."""
    return (catalog.get_type(name) or "").startswith("kedro_mlflow")


_sessions: list[TrackingHooks] = []  # the instance tracking the current session, if any


class TrackingHooks:
    """One MLflow run per `kedro run` (`mlflow_hook.ProjectMlflowHook`, kedro-mlflow's hook with the
    corrections of the module docstring), set up on a tracking thread.

    The plugin's set-up hooks (context, catalog, pipeline start) are queued and handed to one worker
    thread in Kedro's order when the pipeline starts; they return at once. A hook that writes to the run waits for the queue (`ready`)
    and reopens the run in its own thread. When an MLflow run is already active in the session's
    thread (an orchestrator or a notebook started it), the plugin adopts it: then everything runs
    in that thread, as the plugin does.
    """

    def __init__(self):
        self.__name__ = PLUGIN_ENTRY_POINT
        self._hook = None  # ProjectMlflowHook, created on the tracking thread
        self._worker: ThreadPoolExecutor | None = None
        self._queued: Future | None = None  # the last step handed to the tracking thread
        self._pending: list[tuple[str, tuple]] = []  # steps not handed over yet
        self._catalog = None
        self._ended = False  # ended from outside (an interrupted run, hooks.RunReportHooks)

    def _queue(self, method: str, *args) -> None:
        self._pending.append((method, args))

    def _start(self) -> None:
        """Hand the queued steps to the tracking thread (inline when an active run is adopted)."""
        for method, args in self._pending:
            if self._worker is None:
                self._queued = Future()
                self._queued.set_result(self._call(method, args))
            else:
                self._queued = self._worker.submit(self._after, self._queued, partial(self._call, method, args))
        self._pending = []

    @staticmethod
    def _after(previous: Future | None, step) -> None:
        if previous is not None:
            previous.result()  # a failed set-up step stops the ones after it; `ready` raises it
        step()

    def _call(self, method: str, args: tuple) -> None:
        if self._hook is None:
            from mom_pipeline.mlflow_hook import ProjectMlflowHook

            self._hook = ProjectMlflowHook()
        getattr(self._hook, method)(*args)

    def ready(self):
        """The plugin's hook once every queued set-up step is done, with the run open in the calling
        thread (None before a session); raises the error of a failed step."""
        self._start()
        if self._queued is None:
            return None
        self._queued.result()
        if not self._ended:
            self._hook.attach()
        return self._hook

    def _close(self) -> None:
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None
        if self in _sessions:
            _sessions.remove(self)

    @hook_impl
    def after_context_created(self, context):
        self._close()  # one instance serves every session of the process (settings.HOOKS)
        self._hook, self._queued, self._pending, self._catalog, self._ended = None, None, [], None, False
        mlflow = sys.modules.get("mlflow")
        adopt = mlflow is not None and mlflow.active_run() is not None
        self._worker = None if adopt else ThreadPoolExecutor(1, thread_name_prefix="mlflow-tracking")
        _sessions.append(self)
        self._queue("after_context_created", context)

    @hook_impl
    def after_catalog_created(self, catalog, conf_catalog, conf_creds, parameters, save_version, load_versions):
        self._catalog = catalog
        self._queue("after_catalog_created", catalog, conf_catalog, conf_creds, parameters, save_version,
                    load_versions)

    @hook_impl
    def before_pipeline_run(self, run_params, pipeline, catalog):
        # Started here, not with the context: by now Kedro has imported the pipelines' modules,
        # and the tracking thread's imports (MLflow's) seldom meet an import of the main thread.
        # A dataset of the plugin's (a figure's metrics) imports MLflow when Kedro creates it, as the
        # run starts: MLflow is then imported here, before the tracking thread starts (two threads
        # importing MLflow at once can meet inside its circular imports).
        if any(is_mlflow_dataset(catalog, name) for name in pipeline.datasets()):
            import mom_pipeline.mlflow_hook  # noqa: F401
        self._queue("before_pipeline_run", run_params, pipeline, catalog)
        self._start()

    @hook_impl
    def before_node_run(self, node, catalog, inputs, is_async):
        # The plugin reopens the run in the node's thread: done here once the set-up is, else by
        # the first hook that writes to the run. Parameters are logged already, one per leaf.
        if self._queued is not None and self._queued.done():
            self.ready()

    @hook_impl
    def before_dataset_saved(self, dataset_name, data, node):
        if self._catalog is not None and is_mlflow_dataset(self._catalog, dataset_name):
            self.ready()  # an MLflow dataset logs into the run

    @hook_impl
    def after_dataset_saved(self, dataset_name, data, node):
        figure, _, output = dataset_name.rpartition(".")
        if output in TRACKED_OUTPUTS and figure and self._queued is not None:
            self.ready().after_dataset_saved(dataset_name, data, node)

    @hook_impl
    def after_pipeline_run(self, run_params, pipeline, catalog):
        try:
            hook = self.ready()
            if hook is not None and not self._ended:
                hook.after_pipeline_run(run_params, pipeline, catalog)
        finally:
            self._close()

    @hook_impl
    def on_pipeline_error(self, error, run_params, pipeline, catalog):
        try:
            try:
                hook = self.ready()
            except Exception as setup_error:  # noqa: BLE001 - the run's own error is the one raised
                log.warning("MLflow tracking could not be set up: %s: %s", type(setup_error).__name__, setup_error)
                return
            if hook is not None and not self._ended:
                hook.on_pipeline_error(error, run_params, pipeline, catalog)
        finally:
            self._close()

    def then(self, step) -> None:
        """`step()` with the run open: here once the set-up is done, else queued on the tracking
        thread after it. A signal handler must not wait for that thread: the thread may need a lock
        (logging's) that the interrupted code holds."""
        self._start()
        if self._worker is None or self._queued is None or self._queued.done():
            self.ready()
            step()
        else:
            self._queued = self._worker.submit(self._after, self._queued, step)

    def end(self, status: str) -> None:
        """End the run with `status` (KILLED for an interrupted run), after its set-up."""

        def end_run():
            mlflow = sys.modules.get("mlflow")
            while mlflow is not None and mlflow.active_run() is not None:
                mlflow.end_run(status)

        self.then(end_run)
        self._ended = True


def in_tracked_run(step) -> None:
    """`step()` with the current session's MLflow run open (at once when nothing tracks the
    session); see `TrackingHooks.then`."""
    if not _sessions:
        step()
    for session in list(_sessions):
        session.then(step)


def end_tracked_run(status: str) -> None:
    """End the current session's MLflow run with `status` (e.g. KILLED)."""
    for session in list(_sessions):
        session.end(status)
