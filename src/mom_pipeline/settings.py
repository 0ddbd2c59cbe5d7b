"""Kedro project settings."""

from typing import Any

from kedro.config import OmegaConfigLoader


class ProjectConfigLoader(OmegaConfigLoader):
    """OmegaConfigLoader that keeps YAML anchor helpers out of the parameters.

    Kedro already drops top-level keys starting with "_" from the catalog and other config,
    but not from the parameters; the parameter files use such keys (`_lam_grid`, `_mom`, ...)
    only as YAML anchors, so they are dropped here too and never reach nodes or kedro-viz.
    """

    def __getitem__(self, key: str) -> Any:
        config = super().__getitem__(key)
        if key == "parameters":
            return {name: value for name, value in config.items() if not str(name).startswith("_")}
        return config


CONFIG_LOADER_CLASS = ProjectConfigLoader
CONFIG_LOADER_ARGS = {
    "base_env": "base",
    "default_run_env": "local",
    # Environments such as conf/smoke/ override only the keys they name (e.g. trials,
    # sizes) and keep the rest of each experiment from conf/base/.
    "merge_strategy": {"parameters": "soft", "catalog": "soft"},
}

from mom_pipeline.hooks import RunReportHooks  # noqa: E402
from mom_pipeline.runtime_params import RuntimeParameterHooks  # noqa: E402

HOOKS = (RunReportHooks(), RuntimeParameterHooks())
