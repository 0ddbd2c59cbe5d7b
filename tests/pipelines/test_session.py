"""Integration: a KedroSession runs the registered pipelines and writes versioned data."""

import os

import pandas as pd
import pytest
from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project


@pytest.mark.parametrize("pipeline", ["shortest_path", "knapsack"])
def test_session_run_writes_versioned_outputs(project_copy, pipeline):
    os.environ["KEDRO_DISABLE_TELEMETRY"] = "true"
    bootstrap_project(project_copy)
    with KedroSession.create(project_path=project_copy, env="smoke") as session:
        session.run(pipeline_name=pipeline)
    figures = {"shortest_path": ["fig1", "fig2", "fig7"], "knapsack": ["fig3", "fig4", "fig6"]}[pipeline]
    for fig in figures:
        versions = list((project_copy / "data" / "04_feature" / fig / "basis_summary.parquet").iterdir())
        assert len(versions) == 1  # versioned: <path>/<timestamp>/<file>
        table = pd.read_parquet(versions[0] / "basis_summary.parquet")
        assert len(table) > 0 and table["degenerate_fraction"].between(0, 1).all()
        assert (project_copy / "data" / "03_primary" / fig / "problem_data.pkl").is_dir()


def test_session_params_override(project_copy):
    bootstrap_project(project_copy)
    with KedroSession.create(project_path=project_copy, env="smoke",
                             runtime_params={"fig7": {"experiment": {"trials": 3}}}) as session:
        session.run(pipeline_name="shortest_path", namespaces=["fig7"])
    (version,) = list((project_copy / "data" / "03_primary" / "fig7" / "data_summary.parquet").iterdir())
    table = pd.read_parquet(version / "data_summary.parquet")
    assert sorted(table["trial"]) == [0, 1, 2]
    assert not (project_copy / "data" / "03_primary" / "fig1").exists()
