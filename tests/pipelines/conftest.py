"""Fixtures: the project's configuration (smoke environment) and an isolated project copy."""

from pathlib import Path

import pytest
from kedro.config import OmegaConfigLoader
from kedro_runs import empty_tracking_store_in, make_project_copy

from mom_pipeline.settings import CONFIG_LOADER_ARGS

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def smoke_params():
    loader = OmegaConfigLoader(str(PROJECT_ROOT / "conf"), env="smoke", **{
        k: v for k, v in CONFIG_LOADER_ARGS.items() if k != "default_run_env"})
    return loader["parameters"]


@pytest.fixture(scope="session")
def empty_tracking_store(tmp_path_factory) -> Path:
    """An MLflow store holding its tables and nothing else, made once per test process: a
    project's first tracked run creates them, about 1.4 CPU-s and many fsyncs, in each of the
    suite's ~70 project copies. A fresh store's creation is still run by `test_session`'s
    smoke run (its own project folder) and by the tests that replace mlflow.db."""
    return empty_tracking_store_in(tmp_path_factory.mktemp("tracking_store"))


@pytest.fixture()
def project_copy(tmp_path, empty_tracking_store):
    """A copy of the project's conf and pyproject in tmp_path so runs write nothing here."""
    return make_project_copy(tmp_path, empty_tracking_store)
