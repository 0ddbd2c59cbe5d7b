"""The inverse, prescribe and inverse_example pipelines through a KedroSession."""


import numpy as np
import pandas as pd
import pytest
from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project

from mom_pipeline.inverse import InverseInputError, make_example_dataset


def _latest(folder):
    (version,) = sorted(p for p in folder.iterdir() if p.is_dir())[-1:]
    return version / folder.name


def _run(project, pipeline, **runtime):
    bootstrap_project(project)
    with KedroSession.create(project_path=project, env="smoke", runtime_params=runtime or None) as session:
        session.run(pipeline_names=[pipeline])


def test_example_end_to_end(project_copy):
    _run(project_copy, "inverse_example")
    recovery = pd.read_csv(_latest(project_copy / "data" / "08_reporting" / "inverse_example" / "recovery.csv"))
    assert recovery["recovered_fraction"].iloc[0] > 0.8  # MOM reproduces most observed routes from x* alone
    prescriptions = pd.read_csv(_latest(project_copy / "data" / "07_model_output" / "inverse_example"
                                        / "prescriptions.csv"))
    contexts = pd.read_csv(project_copy / "data" / "01_raw" / "inverse_example" / "new_contexts.csv")
    assert list(prescriptions["id"]) == list(contexts["id"])
    routes = prescriptions.drop(columns="id").to_numpy()
    assert set(np.unique(routes)) <= {0.0, 1.0} and (routes.sum(axis=1) == 6).all()  # 4x4 grid: 6 edges


def _user_tables(project, corrupt=None):
    tables = make_example_dataset(n_observations=60, seed=3)
    folder = project / "data" / "01_raw" / "inverse"
    folder.mkdir(parents=True)
    if corrupt:
        corrupt(tables)
    for name in ("features", "decisions", "constraints", "rhs", "bounds", "new_contexts"):
        tables[name].to_csv(folder / f"{name}.csv", index=False)
    return tables


def test_user_data_with_a_bad_row_is_reported_not_dropped_silently(project_copy):
    def corrupt(tables):
        tables["features"].loc[7, "rain_mm"] = np.nan
        d = tables["decisions"]
        d.loc[11, [c for c in d.columns if c != "id"]] = 0.5  # not a route: infeasible
    tables = _user_tables(project_copy, corrupt)
    _run(project_copy, "inverse")
    _run(project_copy, "prescribe")
    rejections = pd.read_csv(_latest(project_copy / "data" / "08_reporting" / "inverse" / "rejections.csv"))
    assert sorted(rejections["id"]) == sorted([tables["features"]["id"][7], tables["decisions"]["id"][11]])
    assert set(rejections["file"]) <= {"features", "decisions"} and rejections["reason"].str.len().gt(0).all()
    recovery = pd.read_csv(_latest(project_copy / "data" / "08_reporting" / "inverse" / "recovery.csv"))
    assert recovery["observations"].iloc[0] == 58
    assert (project_copy / "data" / "07_model_output" / "inverse" / "prescriptions.csv").is_dir()


def test_raise_mode_names_file_and_row(project_copy):
    def corrupt(tables):
        tables["features"].loc[4, "rain_mm"] = np.inf
    _user_tables(project_copy, corrupt)
    with pytest.raises(InverseInputError, match=r"features.*row 4|row 4.*features"):
        _run(project_copy, "inverse", inverse={"on_invalid": "raise"})
