"""The kedro CLI as users type it: the old --pipeline flag and the current --pipelines flag."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from mom_pipeline.tracking import local_tracking_uri

KEDRO = str(Path(sys.executable).parent / "kedro")


def _kedro_run(project, *flags):
    result = subprocess.run([KEDRO, "run", "--env=smoke", *flags], cwd=project, capture_output=True, text=True,
                            timeout=600, env={**os.environ, "KEDRO_DISABLE_TELEMETRY": "true", "MOM_PROGRESS": "0"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (project / "data" / "08_reporting" / "fig5" / "figure.png").is_dir()
    assert not (project / "data" / "03_primary" / "fig3").exists()  # --namespaces / pipeline selection


def test_cli_pipelines_and_namespaces_flags(project_copy):
    _kedro_run(project_copy, "--pipelines=online,knapsack", "--namespaces=fig5")


def test_cli_old_pipeline_flag_and_params_override(project_copy):
    """One run for two things users type: the old --pipeline flag, and --params reaching the run."""
    _kedro_run(project_copy, "--pipeline=online", "--params", "fig5.experiment.trials=1")
    (version,) = list((project_copy / "data" / "07_model_output" / "fig5" / "online_steps.parquet").iterdir())
    assert pd.read_parquet(version / "online_steps.parquet")["trial"].unique().tolist() == [0]


def test_a_kedro_command_prints_no_third_party_warning(project_copy):
    """MLflow's advice on kedro-mlflow's own pipeline model (loaded with the plugin's commands)
    is not printed: no user can act on it."""
    result = subprocess.run([KEDRO, "registry", "list"], cwd=project_copy, capture_output=True, text=True,
                            timeout=300, env={**os.environ, "KEDRO_DISABLE_TELEMETRY": "true"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "__default__" in result.stdout
    assert "Warning" not in result.stderr and "type hints" not in result.stderr, result.stderr[-2000:]


def test_the_kedro_command_imports_mlflow_only_for_the_mlflow_commands(project_copy):
    """Kedro loads every plugin's commands when `kedro` starts; kedro-mlflow's would import MLflow
    (seconds) before `kedro run` reads its configuration. They load when called."""
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "true"}
    loaded = subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                             "from kedro.framework.cli.cli import KedroCLI; cli = KedroCLI(Path.cwd()); "
                             "import click; print(sorted(cli.list_commands(click.Context(cli)))); print('mlflow' in sys.modules)"],
                            cwd=project_copy, capture_output=True, text=True, timeout=300, env=env)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    commands, mlflow_imported = loaded.stdout.splitlines()[-2:]
    assert "'mlflow'" in commands and "'run'" in commands and mlflow_imported == "False"
    result = subprocess.run([KEDRO, "mlflow", "--help"], cwd=project_copy, capture_output=True, text=True,
                            timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ui" in result.stdout and "init" in result.stdout


def test_the_plugin_commands_find_the_projects_store(project_copy):
    """`kedro mlflow ui` reads the plugin's configuration from the context (`context.mlflow`)."""
    result = subprocess.run([sys.executable, "-c", "import kedro_mlflow.framework.cli.cli; from pathlib import Path; "
                             "from kedro.framework.session import KedroSession; "
                             "from kedro.framework.startup import bootstrap_project; bootstrap_project(Path.cwd()); "
                             "session = KedroSession.create(project_path=Path.cwd()); "
                             "print(session.load_context().mlflow.server.mlflow_tracking_uri); session.close()"],
                            cwd=project_copy, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "KEDRO_DISABLE_TELEMETRY": "true"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines()[-1] == local_tracking_uri(project_copy)
