"""Fixtures: the project's configuration (smoke environment) and an isolated project copy."""

import shutil
from pathlib import Path

import pytest
from kedro.config import OmegaConfigLoader

from mom_pipeline.settings import CONFIG_LOADER_ARGS

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def smoke_params():
    loader = OmegaConfigLoader(str(PROJECT_ROOT / "conf"), env="smoke", **{
        k: v for k, v in CONFIG_LOADER_ARGS.items() if k != "default_run_env"})
    return loader["parameters"]


@pytest.fixture()
def project_copy(tmp_path):
    """A copy of the project's conf and pyproject in tmp_path so runs write nothing here."""
    shutil.copytree(PROJECT_ROOT / "conf", tmp_path / "conf", ignore=shutil.ignore_patterns("local"))
    (tmp_path / "conf" / "local").mkdir()
    shutil.copy(PROJECT_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "data").mkdir()
    (tmp_path / "logs").mkdir()  # conf/logging.yml's log file (the repository keeps the folder)
    (tmp_path / "src").mkdir()  # the package itself is installed; bootstrap only needs the folder
    return tmp_path
