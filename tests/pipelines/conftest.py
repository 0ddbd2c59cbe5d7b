"""Fixtures: the project's configuration (smoke environment) and an isolated project copy."""

from pathlib import Path

import pytest
from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project
from kedro.runner import SequentialRunner
from kedro_runs import continue_project, empty_tracking_store_in, make_project_copy, parameters_read_once_per_content

from mom_pipeline.settings import CONFIG_LOADER_ARGS, ProjectConfigLoader
from mom_pipeline.tracking import TRACKING_SWITCH

PROJECT_ROOT = Path(__file__).resolve().parents[2]

TRACKED_MODULES = {"test_session.py", "test_run_status.py", "test_cli.py", "test_tracking_store.py"}


@pytest.fixture(scope="session", autouse=True)
def _untracked_runs():
    """The runs of these tests go untracked (no tracking process: each would be a second
    interpreter importing MLflow, about 6 CPU-s per session, some ten CPU-minutes over the
    suite), except in the modules that test tracking (TRACKED_MODULES), whole runs with it.
    Set here, not at import: the modules' own environments for `kedro run` are made then."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(TRACKING_SWITCH, "off")
        yield


@pytest.fixture(scope="session", autouse=True)
def _parameters_merged_once_per_content():
    """Each session's parameters are the project's loader's result, merged once per distinct
    content of the configuration files, environment and runtime parameters in a test process
    (kedro_runs.parameters_read_once_per_content): most of the suite's sessions read the same
    files, and a copy of the remembered result is some 2 CPU-ms against the merge's 40 (where
    OmegaConf merges, files with interpolations, about 2 CPU-s)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ProjectConfigLoader, "__getitem__",
                      parameters_read_once_per_content(ProjectConfigLoader.__getitem__))
        yield


@pytest.fixture(scope="module", autouse=True)
def _tracking_where_tested(request):
    """Tracking on for the modules of TRACKED_MODULES (before their own module fixtures run)."""
    if Path(str(request.fspath)).name not in TRACKED_MODULES:
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(TRACKING_SWITCH, raising=False)
        yield


@pytest.fixture(scope="session")
def smoke_params():
    loader = ProjectConfigLoader(str(PROJECT_ROOT / "conf"), env="smoke", **{
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


@pytest.fixture(scope="session")
def _fig1_run(tmp_path_factory, empty_tracking_store):
    """Figure 1's smoke run (`shortest_path`, namespace fig1), made once per test process: the
    state several tests start from, each of which began with this same run of its own."""
    project = make_project_copy(tmp_path_factory.mktemp("fig1_run"), empty_tracking_store)
    bootstrap_project(project)
    with KedroSession.create(project_path=project, env="smoke") as session:
        session.run(pipeline_names=["shortest_path"], namespaces=["fig1"], runner=SequentialRunner())
    return project


@pytest.fixture()
def fig1_project(project_copy, _fig1_run, empty_tracking_store):
    """A project copy after one smoke run of figure 1, as if that run had been made in it."""
    return continue_project(_fig1_run, project_copy, empty_tracking_store)
