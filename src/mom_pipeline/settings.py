"""Kedro project settings."""

import copy
import logging
import sys
import warnings
from pathlib import Path
from typing import Any

from kedro.config import OmegaConfigLoader
from tqdm import TqdmWarning

# In a Jupyter kernel without ipywidgets, tqdm.auto warns "IProgress not found" when a module
# imports it (mlflow's, through the tracking below), and then draws the text bar, as wanted
# (`make notebook` installs ipywidgets). Set before those imports.
warnings.filterwarnings("ignore", message=r"IProgress not found", category=TqdmWarning)


def _without_plugin_model_advice(show):
    """`warnings.showwarning` without MLflow's advice to kedro-mlflow's own pipeline model (no type
    hints on its predict), printed when the plugin's commands load: the project logs no models,
    and MLflow puts its own filter in front of any the project sets, so it is dropped here."""

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if "Add type hints to the `predict` method" not in str(message):
            show(message, category, filename, lineno, file, line)

    return showwarning


warnings.showwarning = _without_plugin_model_advice(warnings.showwarning)

from mom_pipeline.config_merge import plain_parameters  # noqa: E402
from mom_pipeline.console import NotYetWrittenPreviews, short_input_errors  # noqa: E402
from mom_pipeline.plugin_commands import load_plugin_commands_lazily  # noqa: E402
from mom_pipeline.tracking import DEFAULT_RUN_ENV  # noqa: E402

# `kedro mlflow ...` is imported when called, not by every `kedro` command (it imports MLflow).
load_plugin_commands_lazily()

# Deprecation notices from third-party code that `kedro run` / `kedro viz` would print and that
# a user cannot act on (Kedro reads this module before it loads the plugins): omegaconf's rename
# of register_new_resolver (called by Kedro and kedro-mlflow), FastAPI's of ORJSONResponse
# (used by kedro-viz).
warnings.filterwarnings("ignore", message=r"register_new_resolver\(\) is deprecated", category=UserWarning)
warnings.filterwarnings("ignore", message=r"ORJSONResponse is deprecated")
# `kedro viz build --include-previews` warns, traceback included, for every dataset no run has
# written yet: one line for all of them (mom_pipeline/console.py).
logging.getLogger("kedro_viz.models.flowchart.node_metadata").addFilter(NotYetWrittenPreviews())
# A `kedro run` stopped by an invalid input table prints that error's one line, not its traceback.
sys.excepthook = short_input_errors(sys.excepthook)


class ProjectConfigLoader(OmegaConfigLoader):
    """OmegaConfigLoader that keeps YAML anchor helpers out of the parameters, and fills in the
    project's own MLflow store where mlflow.yml and MLFLOW_TRACKING_URI name none (in the
    plugin's own keys, so `kedro mlflow ui` opens the same store as `kedro run`).

    Kedro already drops top-level keys starting with "_" from the catalog and other config,
    but not from the parameters; the parameter files use such keys (`_lam_grid`, `_mom`, ...)
    only as YAML anchors, so they are dropped here too and never reach nodes or kedro-viz.

    The parameters are merged as plain containers where that gives OmegaConf's result exactly
    (no interpolations: mom_pipeline.config_merge, tens of milliseconds against OmegaConf's 2
    CPU-s for the project's files), by OmegaConf otherwise; once per loader (for its runtime
    parameters): a run given `--params` reads them twice (the check of its runtime parameters
    validates them for every registered pipeline, the run for its own). Every read gets a copy
    of its own.
    """

    def __getitem__(self, key: str) -> Any:
        if key == "parameters" and key not in self.data:  # not set explicitly on the loader
            return copy.deepcopy(self._merged_parameters())
        config = super().__getitem__(key)
        if key == "parameters":
            return _without_anchors(config)
        if key == "mlflow":
            from mom_pipeline.tracking import local_store

            return local_store(config, Path(self.conf_source).parent)  # conf/ is in the project
        return config

    def _merged_parameters(self) -> dict[str, Any]:
        runtime = repr(self.runtime_params)
        merged = getattr(self, "_parameters_for_runtime", None)
        if merged is None or merged[0] != runtime:
            config = plain_parameters(self)
            if config is None:
                config = super().__getitem__("parameters")
            merged = (runtime, _without_anchors(config))
            self._parameters_for_runtime = merged
        return merged[1]


def _without_anchors(config: dict[str, Any]) -> dict[str, Any]:
    """The parameters without their top-level YAML-anchor keys (those starting with "_")."""
    return {name: value for name, value in config.items() if not str(name).startswith("_")}


CONFIG_LOADER_CLASS = ProjectConfigLoader
CONFIG_LOADER_ARGS = {
    "base_env": "base",
    "default_run_env": DEFAULT_RUN_ENV,
    # Environments such as conf/smoke/ override only the keys they name (e.g. trials,
    # sizes) and keep the rest of each experiment from conf/base/.
    "merge_strategy": {"parameters": "soft", "catalog": "soft"},
}

from mom_pipeline.hooks import ProcessSettingsHooks, RunReportHooks  # noqa: E402
from mom_pipeline.runtime_params import RuntimeParameterHooks  # noqa: E402
from mom_pipeline.tracking import TrackingHooks  # noqa: E402

HOOKS = (ProcessSettingsHooks(), RunReportHooks(), RuntimeParameterHooks(), TrackingHooks())
# TrackingHooks tracks the run with kedro-mlflow's configuration in a process of its own, and holds
# the name of the plugin's hook, so Kedro does not load that one; the plugin's own instance would
# track every run a second time, should it be loaded another way.
DISABLE_HOOKS_FOR_PLUGINS = ("kedro_mlflow", "kedro-mlflow")
