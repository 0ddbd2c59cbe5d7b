"""Experiment tracking with MLflow: one MLflow run per `kedro run`, set up by kedro-mlflow's own
configuration (conf/base/mlflow.yml, `KedroMlflowConfig`) in the run's tracking process
(`mom_pipeline.tracking_worker`), which `TrackingHooks` starts when the session's context is
created: MLflow's import and its store never delay the first node, and the run's process holds no
MLflow thread when it forks workers (docs/decisions/023-tracking-process.md). settings.py registers
`TrackingHooks` under the name of the plugin's own hook, so Kedro never loads that one (it would
import MLflow and track every run a second time). What the run records:

- the store: the plugin's `server.mlflow_tracking_uri` and `create_experiment_kwargs.artifact_location`
  (conf/base/mlflow.yml); when both it and MLFLOW_TRACKING_URI are unset, the config loader fills in
  the project's own store, `sqlite:///<project>/mlflow.db` with artifacts in `<project>/mlartifacts/`
  (`local_store`); MLflow's empty `Default` experiment of a new local store is hidden;
- the run's name is `<pipelines> (<env>)` unless mlflow.yml names it;
- tags: the exact command (`kedro_command`, from the command line), the env, the Kedro run id
  (= the save version of every versioned dataset of the run), the git commit and whether the work
  tree had uncommitted changes; the run's parameters as the plugin tags them, made readable (runner
  by class name, lists joined), without its copy of the run id;
- parameters: one per leaf, all logged when the run starts (log_batch), so an interrupted run
  still says what it ran with;
- a run stopped by SIGINT/SIGTERM ends KILLED (hooks.RunReportHooks ends it), a failed one FAILED,
  one whose process vanished (SIGKILL) KILLED by the tracking process;
- every figure's summaries and figures (the versioned files just saved) as artifacts under `<figure>/`,
  and the catalog's kedro-mlflow datasets (`tracking_process.TrackingProcessDataset`);
- `disable_tracking.pipelines` of mlflow.yml: no run, no dataset logs; the environment variable
  MOM_PIPELINE_TRACKING=off: no run and no tracking process at all;
- a store that cannot be used (a corrupt, locked or full `mlflow.db`, a server out of reach) turns
  tracking off for the run, with one warning that names the store and the remedy; the run itself
  goes on.
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
from pathlib import Path

from kedro.config import MissingConfigException
from kedro.framework.hooks import hook_impl

from mom_pipeline import tracking_process
from mom_pipeline.hooks import saved_path
from mom_pipeline.reporting.tables import metric_name

log = logging.getLogger(__name__)

#: The environment variable that turns tracking off for a session ("off"), tracking process and all.
TRACKING_SWITCH = "MOM_PIPELINE_TRACKING"


#: The environment a run without --env uses (settings.py's CONFIG_LOADER_ARGS takes it from here).
DEFAULT_RUN_ENV = "local"

#: The name of kedro-mlflow's hook among Kedro's plugin hooks (its `kedro.hooks` entry point).
PLUGIN_ENTRY_POINT = "mlflow_hook"
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


def _runner_name(runner) -> str:
    """The runner's class name: Kedro hands it over as an object's repr ("<kedro.runner....
    SequentialRunner object at 0x..>"), or "None" for a session's default runner."""
    text = str(runner)
    if text in ("None", ""):
        return "SequentialRunner"
    return text.split()[0].rsplit(".", 1)[-1] if text.startswith("<") else text


def store_remedy(uri: str) -> str:
    """What to do about a tracking store at `uri` that cannot be used."""
    if uri.startswith("sqlite:///"):
        path = uri.removeprefix("sqlite:///")
        return (f"if another process holds it (`kedro mlflow ui`, another run), run again when it is done; if "
                f"the disk is full, free space; if it is damaged, move it aside (mv {path} {path}.broken): the next "
                "run starts a new store")
    return ("check that the tracking server answers (server.mlflow_tracking_uri in conf/*/mlflow.yml or "
            "MLFLOW_TRACKING_URI)")


def _tag_value(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def run_tags(run_params: dict, names: list[str], env: str) -> dict[str, str]:
    """The run's tags: every truthy run parameter (as kedro-mlflow tags them, made readable) and
    the exact command, the env, the Kedro run id (the git commit is added by the tracking process)."""
    tags = {k: _tag_value(v) for k, v in run_params.items() if v and k not in REDUNDANT_PLUGIN_TAGS}
    tags.update({"kedro_command": kedro_command(run_params), "env": env, "kedro_run_id": run_params.get("run_id") or "",
                 "pipeline_names": ",".join(names), "runner": _runner_name(run_params.get("runner"))})
    return tags


def run_parameters(pipeline, catalog) -> dict[str, str]:
    """Every parameter the run's nodes read, one per leaf (fig1.experiment.trials, ...)."""
    flat = {}
    for name in sorted(pipeline.inputs()):
        if name.startswith("params:"):
            flat.update(flatten_parameters(name.removeprefix("params:"), catalog.load(name)))
    return flat


def mlflow_config(context) -> dict:
    """The run's kedro-mlflow configuration (mlflow.yml, the project's store filled in), as the
    plugin reads it: its default (an empty file) when there is none; the experiment named after
    the package unless mlflow.yml names it."""
    loader = context.config_loader
    if "mlflow" not in loader.config_patterns:
        loader.config_patterns.update({"mlflow": ["mlflow*", "mlflow*/**", "**/mlflow*"]})
    try:
        config = dict(loader["mlflow"])
    except MissingConfigException:
        log.warning("No 'mlflow.yml' config file found in environment: kedro-mlflow's default configuration is used.")
        config = {}
    tracking = dict(config.get("tracking") or {})
    experiment = dict(tracking.get("experiment") or {})
    if experiment.get("name") is None:
        experiment["name"] = context._package_name or Path(context.project_path).name
    return {**config, "tracking": {**tracking, "experiment": experiment}}


def _register_plugin_resolver() -> None:
    """kedro-mlflow's `km.random_name` resolver for mlflow.yml, importing MLflow only when used."""
    from omegaconf import OmegaConf

    def random_name():
        from kedro_mlflow.config.resolvers import resolve_random_name

        return resolve_random_name()

    if not OmegaConf.has_resolver("km.random_name"):
        OmegaConf.register_new_resolver("km.random_name", random_name, use_cache=True)


def set_plugin_config(context, config: dict) -> None:
    """kedro-mlflow's configuration object as `context.mlflow`, as the plugin's hook sets it, where
    MLflow is imported already (building it imports MLflow): the plugin's commands read it
    (`kedro mlflow ui` opens the store it names), and so may a notebook that uses MLflow."""
    if "mlflow" not in sys.modules:
        return
    from kedro_mlflow.config.kedro_mlflow_config import KedroMlflowConfig, _validate_uri

    plugin_config = KedroMlflowConfig.model_validate(config)
    uri = plugin_config.server.mlflow_tracking_uri or os.environ.get("MLFLOW_TRACKING_URI", "mlruns")
    plugin_config.server.mlflow_tracking_uri = _validate_uri(project_path=context.project_path, uri=uri)
    context.__setattr__("mlflow", plugin_config)  # KedroContext is frozen: as the plugin does


class TrackingHooks:
    """One MLflow run per `kedro run`, recorded by the run's tracking process (module docstring).
    One instance serves every session of the process (settings.HOOKS): each starts afresh."""

    def __init__(self):
        self.__name__ = PLUGIN_ENTRY_POINT  # pluggy's name for it: Kedro then skips the plugin's hook
        self._catalog = None
        self._config: dict = {}
        self._process: tracking_process.TrackingProcess | None = None
        self._store_failure = None  # why tracking is off for this session (None: it is on)

    def _on_event(self, event: dict) -> None:
        if event.get("event") != "off" or self._store_failure is not None:
            return
        self._store_failure = event["error"]
        tracking_process.untracked_because = self._store_failure
        uri = event.get("uri") or (self._config.get("server") or {}).get("mlflow_tracking_uri") or "(none)"
        if event.get("store"):
            log.warning("MLflow tracking is off for this run: the store %s cannot be used (%s); %s. The run goes on "
                        "and writes its outputs under data/ as usual.", uri, self._store_failure, store_remedy(uri))
        else:
            log.warning("MLflow tracking is off for this run: its tracking process failed (%s; the traceback is "
                        "above). The run goes on and writes its outputs under data/ as usual.", self._store_failure)
        tracking_process.current = None

    def _finish(self, status: str | None) -> None:
        """End the run with `status` (None: none was started); an interrupted run has ended already."""
        process, self._process = self._process, None
        if tracking_process.current is process:
            tracking_process.current = None
        if process is not None:
            process.finish(status)

    @hook_impl
    def after_context_created(self, context):
        self._finish(None)  # a previous session's process that never started a run
        _register_plugin_resolver()
        self._store_failure = None
        tracking_process.untracked_because = None
        if os.environ.get(TRACKING_SWITCH, "").strip().lower() == "off":
            # No tracking process at all (it costs a second interpreter's MLflow import): the
            # test suite's runs that are not about tracking, or a user's throwaway session.
            tracking_process.untracked_because = f"{TRACKING_SWITCH}=off"
            log.info("MLflow tracking is off (%s=off)", TRACKING_SWITCH)
            return
        self._config = mlflow_config(context)
        set_plugin_config(context, self._config)
        server = self._config.get("server") or {}
        credentials = {}
        if server.get("credentials"):
            credentials = {server["credentials"]: context._get_config_credentials().get(server["credentials"], {})}
        self._process = tracking_process.TrackingProcess(Path(context.project_path), self._on_event)
        self._process.send("setup", config=self._config, project_path=str(context.project_path),
                           credentials=credentials,
                           hide_default=server.get("mlflow_tracking_uri") == local_tracking_uri(context.project_path))

    @hook_impl
    def after_catalog_created(self, catalog):
        self._catalog = catalog

    @hook_impl
    def before_pipeline_run(self, run_params, pipeline, catalog):
        if self._process is None:
            return
        names = run_params.get("pipeline_names") or [run_params.get("pipeline_name") or "__default__"]
        tracking = self._config.get("tracking") or {}
        disabled = (tracking.get("disable_tracking") or {}).get("pipelines") or []
        if all(name in disabled for name in names):
            log.info("MLflow tracking is off for the pipelines %s (disable_tracking in mlflow.yml)", ", ".join(names))
            tracking_process.untracked_because = "disable_tracking"
            self._finish(None)
            return
        env = run_env(run_params)
        run_name = (tracking.get("run") or {}).get("name") or f"{'+'.join(names)} ({env})"
        self._process.send("start", run_name=run_name, tags=run_tags(run_params, names, env),
                           params=run_parameters(pipeline, catalog))
        tracking_process.current = self._process

    @hook_impl
    def before_node_run(self):
        if self._process is not None:
            self._process.poll()  # a store that failed is said as soon as it is known

    @hook_impl
    def after_pipeline_run(self):
        self._finish("FINISHED")

    @hook_impl
    def on_pipeline_error(self):
        self._finish("FAILED")  # nothing left to end after an interruption (ended KILLED)

    @hook_impl
    def after_dataset_saved(self, dataset_name):
        figure, _, output = dataset_name.rpartition(".")
        if output not in TRACKED_OUTPUTS or not figure or self._catalog is None or tracking_process.current is None:
            return
        path = saved_path(self._catalog.get(dataset_name))
        if path is not None and Path(str(path)).is_file():
            tracking_process.log_artifact(path, artifact_path=figure)
