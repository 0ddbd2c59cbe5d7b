"""kedro-mlflow's `kedro mlflow ...` commands loaded when they are called, not by every `kedro`
command: Kedro imports every plugin's command module when the `kedro` command starts, and
kedro-mlflow's imports MLflow (2-3 s) before `kedro run` has even read its configuration. The
`mlflow` group stays listed and works as before (`kedro mlflow ui`, `kedro mlflow init`).

settings.py calls `load_plugin_commands_lazily()`; Kedro reads settings.py (bootstrapping the
project) just before it loads the plugins' commands. Should Kedro change how it loads plugin commands, nothing is
replaced and the commands load as Kedro loads them.
"""

from __future__ import annotations

import sys

#: The plugin whose commands wait to be called, and where its `mlflow` group lives.
LAZY_PLUGIN_MODULE = "kedro_mlflow"
LAZY_GROUPS = {"mlflow": "kedro_mlflow.framework.cli.cli.mlflow_commands"}


def _lazy_plugin_group():
    from kedro.framework.cli.utils import LazyGroup

    return LazyGroup(name="Mlflow", lazy_subcommands=dict(LAZY_GROUPS))


def load_plugin_commands_lazily() -> None:
    utils = sys.modules.get("kedro.framework.cli.utils")
    if utils is None:
        return  # no command line (a session in a notebook, a test, kedro-viz's server)
    load = getattr(utils, "load_entry_points", None)
    if load is None or getattr(load, "lazy_plugins", False) or not hasattr(utils, "_get_entry_points"):
        return

    def load_entry_points(name: str):
        if name != "project":
            return load(name)
        commands = []
        for entry_point in utils._get_entry_points(name):
            if entry_point.module.split(".")[0] == LAZY_PLUGIN_MODULE:
                commands.append(_lazy_plugin_group())
            else:
                loaded = utils._safe_load_entry_point(entry_point)
                if loaded:
                    commands.append(loaded)
        return commands

    load_entry_points.lazy_plugins = True
    # `kedro` (its command collection) and `python -m mom_pipeline` (find_run_command) load them
    for module in (utils, sys.modules.get("kedro.framework.cli.cli")):
        if module is not None and getattr(module, "load_entry_points", None) is load:
            module.load_entry_points = load_entry_points
