"""The state several inverse tests start from, made once per test process: the user's tables of
the shipped example (60 observations, seed 3), then `kedro run --pipelines=inverse` (lambda
tuned) and `--pipelines=prescribe`. Each test gets a project copy of its own in that state."""

import pytest
from inverse_user_tables import example_tables, write_user_tables
from kedro_runs import continue_project, make_project_copy, run


@pytest.fixture(scope="session")
def _inverse_and_prescribe_run(tmp_path_factory, empty_tracking_store):
    project = make_project_copy(tmp_path_factory.mktemp("inverse_trained"), empty_tracking_store)
    write_user_tables(project, example_tables())
    run(project, "inverse")
    run(project, "prescribe")
    return project


@pytest.fixture()
def trained_project(project_copy, _inverse_and_prescribe_run, empty_tracking_store):
    """A project copy after one inverse and one prescribe run on the example's tables."""
    return continue_project(_inverse_and_prescribe_run, project_copy, empty_tracking_store)
