"""Kedro project settings."""

from kedro.config import OmegaConfigLoader

CONFIG_LOADER_CLASS = OmegaConfigLoader
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
