"""kedro-mlflow's hook with the project's corrections (mom_pipeline/tracking.py says which).
Importing this module imports MLflow (seconds): `tracking.TrackingHooks` does it on its tracking
thread, so a run's first node does not wait for it. The methods are the plugin's hook methods,
called by TrackingHooks, not registered with Kedro themselves.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

from kedro_mlflow.io.catalog.switch_catalog_logging import switch_catalog_logging

from mom_pipeline.hooks import git_state, saved_path
from mom_pipeline.tracking import (REDUNDANT_PLUGIN_TAGS, TRACKED_OUTPUTS, _runner_name, flatten_parameters,
                                   hide_empty_default_experiment, kedro_command, local_tracking_uri, run_env,
                                   store_errors, store_remedy)

log = logging.getLogger("mom_pipeline.tracking")


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


class ProjectMlflowHook(MlflowHook):
    """kedro-mlflow's hook with the corrections listed in mom_pipeline/tracking.py's docstring."""

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

    def attach(self) -> None:
        """The run open in the calling thread too: MLflow keeps the active run per thread, and the
        run was started on the tracking thread (the plugin reopens it per node for the same reason)."""
        import mlflow

        if self.run_id is None or self._store_failure is not None or not self._is_mlflow_enabled:
            return
        if mlflow.active_run() is None:
            try:
                mlflow.start_run(run_id=self.run_id, nested=self.mlflow_config.tracking.run.nested)
            except store_errors() as error:
                self._tracking_off(error, self.mlflow_config.server.mlflow_tracking_uri)

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

    def after_catalog_created(self, catalog, conf_catalog, conf_creds, parameters, save_version, load_versions):
        super().after_catalog_created(catalog, conf_catalog, conf_creds, parameters, save_version, load_versions)
        self._catalog = catalog

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

    def before_node_run(self, node, catalog, inputs, is_async):
        # The plugin re-opens the run here (threads) and logs the node's parameters; those are
        # logged already, one per leaf, so they are not handed over.
        others = {k: v for k, v in inputs.items() if not (k.startswith("params:") or k == "parameters")}
        super().before_node_run(node, catalog, others, is_async)

    def after_pipeline_run(self, run_params, pipeline, catalog):
        try:
            super().after_pipeline_run(run_params, pipeline, catalog)
        except store_errors() as error:  # the run itself succeeded
            self._tracking_off(error, self.mlflow_config.server.mlflow_tracking_uri)
            switch_catalog_logging(catalog, True)

    def on_pipeline_error(self, error, run_params, pipeline, catalog):
        import mlflow

        if self._is_mlflow_enabled and mlflow.active_run() is None:
            return  # already ended (an interrupted run ends KILLED in hooks.RunReportHooks)
        try:
            super().on_pipeline_error(error, run_params, pipeline, catalog)
        except store_errors() as store_error:  # the run's own error is the one to raise
            self._tracking_off(store_error, self.mlflow_config.server.mlflow_tracking_uri)

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
