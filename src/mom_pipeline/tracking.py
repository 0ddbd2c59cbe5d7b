"""Experiment tracking with MLflow (through the kedro-mlflow plugin, which opens one MLflow
run per `kedro run` and logs the parameters and the `<figure>.metrics` datasets).

These hooks add what the plugin does not:
- a local store inside the project by default: `sqlite:///<project>/mlflow.db` with artifacts
  in `<project>/mlartifacts/` (both git-ignored), unless `server.mlflow_tracking_uri` is set
  in mlflow.yml or MLFLOW_TRACKING_URI in the environment (a team's shared server);
- tags: the Kedro run id (= the save version of every versioned dataset of the run), the git
  commit and whether the work tree had uncommitted changes;
- every figure's summaries and figures (the versioned files just saved) as artifacts under
  `<figure>/`.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

from kedro.framework.hooks import hook_impl

from mom_pipeline.hooks import git_state
from mom_pipeline.reporting.tables import metric_name

log = logging.getLogger(__name__)


def _import_plugin_quietly() -> None:
    """Import kedro-mlflow's hook without MLflow's advice on type hints for the plugin's own
    pipeline model, which every `kedro` command would print and no user can act on (MLflow
    forces that warning through its own filter, so it is caught here); others pass through."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        import kedro_mlflow.framework.hooks  # noqa: F401
    for w in caught:
        if "type hint" not in str(w.message):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


_import_plugin_quietly()

LOCAL_STORE = "mlflow.db"
LOCAL_ARTIFACTS = "mlartifacts"
DEFAULT_EXPERIMENT = "mom_pipeline"
# Outputs of every figure's reporting stage that become artifacts of the run.
TRACKED_OUTPUTS = ("summary_table", "summary_markdown", "figure", "figure_plotly")


def local_tracking_uri(project_path: str | Path) -> str:
    return f"sqlite:///{(Path(project_path).resolve() / LOCAL_STORE).as_posix()}"


def _mlflow_config(context) -> dict:
    loader = context.config_loader
    if "mlflow" not in loader.config_patterns:
        loader.config_patterns["mlflow"] = ["mlflow*", "mlflow*/**", "**/mlflow*"]
    try:
        return dict(loader["mlflow"] or {})
    except Exception:  # noqa: BLE001 - no mlflow.yml: the plugin's defaults
        return {}


def ensure_local_experiment(uri: str, name: str, artifacts: Path) -> None:
    """Create experiment `name` in the local store with its artifacts under `artifacts`
    (MLflow would otherwise put them in ./mlruns of whatever directory you run from)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    if client.get_experiment_by_name(name) is None:
        client.create_experiment(name, artifact_location=artifacts.resolve().as_uri())


def saved_path(dataset):
    """The file a dataset has just saved (its save version's file when versioned), or None."""
    version = getattr(dataset, "_version", None)
    if version is not None and version.save:
        return dataset._get_versioned_path(version.save)
    return getattr(dataset, "_filepath", None)


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


class TrackingHooks:
    """See the module docstring."""

    def __init__(self):
        self._catalog = None
        self._set_uri = None  # the URI this hook put into MLFLOW_TRACKING_URI, until it is removed

    @hook_impl(tryfirst=True)  # before kedro-mlflow reads the tracking URI
    def after_context_created(self, context):
        if self._set_uri is not None and os.environ.get("MLFLOW_TRACKING_URI") == self._set_uri:
            # Left by a session that failed before its catalog was created (another project,
            # or another run in the same process): it must not decide this session's store.
            os.environ.pop("MLFLOW_TRACKING_URI")
        self._set_uri = None
        config = _mlflow_config(context)
        configured = (config.get("server") or {}).get("mlflow_tracking_uri")
        if configured or os.environ.get("MLFLOW_TRACKING_URI"):
            return
        uri = local_tracking_uri(context.project_path)
        name = ((config.get("tracking") or {}).get("experiment") or {}).get("name") or DEFAULT_EXPERIMENT
        ensure_local_experiment(uri, name, Path(context.project_path) / LOCAL_ARTIFACTS)
        # kedro-mlflow falls back on this variable; it is removed again once the plugin has
        # set the URI, so that another project in the same process gets its own store.
        os.environ["MLFLOW_TRACKING_URI"] = uri
        self._set_uri = uri

    @hook_impl
    def after_catalog_created(self, catalog):
        self._catalog = catalog
        if self._set_uri is not None:
            os.environ.pop("MLFLOW_TRACKING_URI", None)
            self._set_uri = None

    @hook_impl(trylast=True)  # after kedro-mlflow has started the run
    def before_pipeline_run(self, run_params, pipeline, catalog):
        import mlflow

        if mlflow.active_run() is None:
            return
        commit, dirty = git_state(run_params.get("project_path") or ".")
        mlflow.set_tags({"kedro_run_id": run_params.get("run_id") or "", "git_commit": commit,
                         "git_dirty": str(dirty).lower()})
        # The run's parameters, flattened (fig1.experiment.trials, ...). Logged here because the
        # plugin flattens plain dicts only, and experiment specs reach the nodes as typed models.
        flat = {}
        for name in sorted(pipeline.inputs()):
            if name.startswith("params:"):
                flat.update(flatten_parameters(name.removeprefix("params:"), catalog.load(name)))
        items = list(flat.items())
        for start in range(0, len(items), 100):  # MLflow takes at most 100 parameters per call
            mlflow.log_params(dict(items[start:start + 100]))

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
            mlflow.log_artifact(str(path), artifact_path=figure)
