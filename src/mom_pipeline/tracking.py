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
  and the remedy; the run itself goes on (`TrackingHooks._tracking_off`).
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
import warnings
from pathlib import Path

from kedro.framework.hooks import hook_impl
from kedro_mlflow.io.catalog.switch_catalog_logging import switch_catalog_logging

from mom_pipeline.hooks import git_state, saved_path
from mom_pipeline.reporting.tables import metric_name

log = logging.getLogger(__name__)


#: The environment a run without --env uses (settings.py's CONFIG_LOADER_ARGS takes it from here).
DEFAULT_RUN_ENV = "local"

def _import_plugin_quietly():
    """kedro-mlflow's hook class, imported without MLflow's advice on type hints for the plugin's
    own pipeline model, which every `kedro` command would print and no user can act on (MLflow
    forces that warning through its own filter, so it is caught here); others pass through."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        from kedro_mlflow.framework.hooks.mlflow_hook import MlflowHook
    for w in caught:
        if "type hint" not in str(w.message):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return MlflowHook


MlflowHook = _import_plugin_quietly()

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


class TrackingHooks(MlflowHook):
    """kedro-mlflow's hook with the corrections of the module docstring."""

    def __init__(self):
        super().__init__()
        self._catalog = None
        self._store_failure = None  # why tracking is off for this session (None: it is on)

    def _tracking_off(self, error: Exception, uri: str | None) -> None:
        """Tracking off for the rest of the session, said once: the store, the error, the remedy."""
        import mlflow

        if self._store_failure is not None:
            return
        uri = uri or mlflow.get_tracking_uri()
        first_line = (str(error).splitlines() or [""])[0]
        self._store_failure = f"{type(error).__name__}: {first_line}"
        self._is_mlflow_enabled = False
        log.warning("MLflow tracking is off for this run: the store %s cannot be used (%s); %s. The run goes on "
                    "and writes its outputs under data/ as usual.", uri, self._store_failure, store_remedy(uri))
        while mlflow.active_run() is not None:
            try:
                mlflow.end_run("FAILED")
            except store_errors():
                pass  # end_run took the run off its stack first: the store cannot record its end

    @hook_impl
    def after_context_created(self, context):
        # mlflow.set_tracking_uri (called by the plugin) also exports MLFLOW_TRACKING_URI, which
        # would then decide the store of the next session in this process (a notebook, the tests)
        # and of every `kedro run` it starts: the variable is put back as it was.
        from kedro_mlflow.config.kedro_mlflow_config import KedroMlflowConfig

        exported = os.environ.get("MLFLOW_TRACKING_URI")
        # One instance serves every session of the process (settings.HOOKS): each starts afresh.
        # The plugin's before_node_run reopens `run_id` whenever it is set: an untracked session
        # would reopen the previous session's run.
        self._store_failure = None
        self.run_id = None
        self.__dict__.pop("mlflow_config", None)
        try:
            super().after_context_created(context)
            config = self.mlflow_config
            if config.server.mlflow_tracking_uri == local_tracking_uri(context.project_path):
                hide_empty_default_experiment(config.server._mlflow_client)
        except store_errors() as error:
            # the plugin stopped in its setup, before keeping its configuration: kept here, unset up
            if not hasattr(self, "mlflow_config"):
                self.mlflow_config = KedroMlflowConfig.model_validate({**context.config_loader["mlflow"]})
                self._already_active_mlflow = False
            self._tracking_off(error, self.mlflow_config.server.mlflow_tracking_uri)
        finally:
            if exported is None:
                os.environ.pop("MLFLOW_TRACKING_URI", None)
            else:
                os.environ["MLFLOW_TRACKING_URI"] = exported

    @hook_impl
    def after_catalog_created(self, catalog, conf_catalog, conf_creds, parameters, save_version, load_versions):
        super().after_catalog_created(catalog, conf_catalog, conf_creds, parameters, save_version, load_versions)
        self._catalog = catalog

    @hook_impl
    def before_pipeline_run(self, run_params, pipeline, catalog):
        import mlflow

        run = self.mlflow_config.tracking.run
        named = run.name
        names = run_params.get("pipeline_names") or [run_params.get("pipeline_name") or "__default__"]
        env = run_env(run_params)
        if named is None:
            run.name = f"{'+'.join(names)} ({env})"
        disabled = self.mlflow_config.tracking.disable_tracking
        configured_off = disabled.pipelines
        if self._store_failure is not None:  # the plugin's own switch: no run, no MLflow dataset logs
            disabled.pipelines = [*configured_off, *names]
        try:
            super().before_pipeline_run(run_params, pipeline, catalog)
            if self._is_mlflow_enabled and mlflow.active_run() is not None:
                self._tag_and_log_parameters(run_params, pipeline, catalog, names, env)
        except store_errors() as error:
            self._tracking_off(error, self.mlflow_config.server.mlflow_tracking_uri)
            switch_catalog_logging(catalog, False)
        finally:
            run.name = named
            disabled.pipelines = configured_off

    def _tag_and_log_parameters(self, run_params, pipeline, catalog, names: list, env: str) -> None:
        import mlflow

        client = self.mlflow_config.server._mlflow_client
        plugin_tags = client.get_run(self.run_id).data.tags
        for key in REDUNDANT_PLUGIN_TAGS:
            if key in plugin_tags:
                client.delete_tag(self.run_id, key)
        commit, dirty = git_state(run_params.get("project_path") or ".")
        tags = {"kedro_command": kedro_command(run_params), "env": env, "kedro_run_id": run_params.get("run_id") or "",
                "git_commit": commit, "git_dirty": str(dirty).lower(), "pipeline_names": ",".join(names)}
        tags["runner"] = _runner_name(run_params.get("runner"))
        mlflow.set_tags(tags)
        # Every parameter the run's nodes read, one per leaf (fig1.experiment.trials, ...), at the
        # start: an interrupted run still says what it ran with.
        flat = {}
        for name in sorted(pipeline.inputs()):
            if name.startswith("params:"):
                flat.update(flatten_parameters(name.removeprefix("params:"), catalog.load(name)))
        items = list(flat.items())
        for start in range(0, len(items), 100):  # MLflow takes at most 100 parameters per call
            mlflow.log_params(dict(items[start:start + 100]))

    @hook_impl
    def before_node_run(self, node, catalog, inputs, is_async):
        # The plugin re-opens the run here (threads) and logs the node's parameters; those are
        # logged already, one per leaf, so they are not handed over.
        others = {k: v for k, v in inputs.items() if not (k.startswith("params:") or k == "parameters")}
        super().before_node_run(node, catalog, others, is_async)

    @hook_impl
    def after_pipeline_run(self, run_params, pipeline, catalog):
        try:
            super().after_pipeline_run(run_params, pipeline, catalog)
        except store_errors() as error:  # the run itself succeeded
            self._tracking_off(error, self.mlflow_config.server.mlflow_tracking_uri)
            switch_catalog_logging(catalog, True)

    @hook_impl
    def on_pipeline_error(self, error, run_params, pipeline, catalog):
        import mlflow

        if self._is_mlflow_enabled and mlflow.active_run() is None:
            return  # already ended (an interrupted run ends KILLED in hooks.RunReportHooks)
        try:
            super().on_pipeline_error(error, run_params, pipeline, catalog)
        except store_errors() as store_error:  # the run's own error is the one to raise
            self._tracking_off(store_error, self.mlflow_config.server.mlflow_tracking_uri)

    @hook_impl
    def after_dataset_saved(self, dataset_name, data, node):
        figure, _, output = dataset_name.rpartition(".")
        if output not in TRACKED_OUTPUTS or not figure or self._catalog is None:
            return
        import mlflow

        if mlflow.active_run() is None:
            return
        path = saved_path(self._catalog.get(dataset_name))
        if path is not None and Path(str(path)).is_file():
            try:
                mlflow.log_artifact(str(path), artifact_path=figure)
            except store_errors() as error:
                self._tracking_off(error, self.mlflow_config.server.mlflow_tracking_uri)
