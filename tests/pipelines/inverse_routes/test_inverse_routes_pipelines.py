"""The inverse_routes and inverse_routes_example pipelines through a KedroSession."""

import pandas as pd
import pytest
from kedro_runs import latest as _latest
from kedro_runs import run as _run

from mom_pipeline.experiments.spec import SpecError
from mom_pipeline.inverse.schema import InverseInputError
from mom_pipeline.networks import NetworkInputError
from mom_pipeline.networks.files import NetworkNotFound, locate_network
from mom_pipeline.networks.generate import generate_routes, grid_network
from mom_pipeline.pipelines.inverse_routes.params import InverseRoutesExampleParams, InverseRoutesParams


def _needs_route_mom():
    pytest.importorskip("mom_pipeline.methods.route_mom", reason="the estimator RouteMOM is not in this checkout yet")


def _output(project, layer, namespace, name):
    return pd.read_csv(_latest(project / "data" / layer / namespace / name))


def test_example_on_sioux_falls_reproduces_most_held_out_routes(project_copy):
    _needs_route_mom()
    try:
        locate_network("SiouxFalls")
    except NetworkNotFound as missing:
        pytest.skip(str(missing))
    _run(project_copy, "inverse_routes_example", inverse_routes_example={"network": "SiouxFalls"})
    summary = _output(project_copy, "08_reporting", "inverse_routes_example", "route_agreement.csv").iloc[0]
    assert summary["network"] == "SiouxFalls_net.tntp" and summary["observations"] == 240
    assert summary["heldout_reproduced_share"] >= 0.9 and summary["training_reproduced_share"] >= 0.9
    assert summary["certificate_gap"] <= 1e-6
    theta = _output(project_copy, "07_model_output", "inverse_routes_example", "theta.csv")
    assert list(theta["arc_attribute"]) == ["free_flow_time", "baseline_delay"]
    assert list(theta.columns[1:]) == ["hour_sin", "hour_cos", "weekend", "rain", "demand_index",
                                       "rain_x_demand_index", "intercept"]
    # the learned costs put weight where the true ones do: free-flow time on the intercept, delay on demand
    assert theta.loc[0, "intercept"] > 0 and theta.loc[1, "demand_index"] > 0
    new_routes = _output(project_copy, "07_model_output", "inverse_routes_example", "new_routes.csv")
    contexts = pd.read_csv(project_copy / "data" / "01_raw" / "inverse_routes_example" / "new_contexts.csv")
    assert list(new_routes["id"]) == list(contexts["id"])
    first = new_routes["nodes"].str.split().str[0].astype(int)
    assert (first == new_routes["origin"]).all()
    agreement = _output(project_copy, "08_reporting", "inverse_routes_example", "new_route_agreement.csv")
    assert agreement["true_route_share"].iloc[0] >= 0.85


def _user_data(project, corrupt=None, n=60):
    """The user's layout: an arc table network and routes / features / new contexts in data/01_raw/inverse_routes/."""
    network, trips = grid_network(3, 3)
    tables = generate_routes(network, trips, n_observations=n, n_new=5, seed=1)
    folder = project / "data" / "01_raw" / "inverse_routes"
    folder.mkdir(parents=True)
    if corrupt:
        corrupt(tables)
    tables["network"].arc_table().drop(columns="arc").to_csv(folder / "arcs.csv", index=False)
    for name in ("features", "routes", "new_contexts"):
        tables[name].to_csv(folder / f"{name}.csv", index=False)
    return {"network_file": "data/01_raw/inverse_routes/arcs.csv"}


def test_user_data_with_bad_routes_is_reported_per_file_row_and_id(project_copy):
    _needs_route_mom()
    def corrupt(tables):
        tables["routes"].loc[3, "nodes"] = "1 2 9"  # no arc 2-9 on the 3x3 grid
        tables["routes"].loc[5, "nodes"] = tables["routes"].loc[5, "nodes"] + " 77"

    params = _user_data(project_copy, corrupt)
    _run(project_copy, "inverse_routes", inverse_routes={**params, "model": {"lam": 0.01}})
    report = _output(project_copy, "08_reporting", "inverse_routes", "rejections.csv")
    assert list(report["id"]) == ["r00003", "r00005"] and list(report["row"]) == [3, 5]
    assert (report["file"] == "data/01_raw/inverse_routes/routes.csv").all()
    assert "no arc 2-9" in report["reason"].iloc[0] and "'77'" in report["reason"].iloc[1]
    theta = _output(project_copy, "07_model_output", "inverse_routes", "theta.csv")
    assert list(theta.columns[:3]) == ["arc", "tail", "head"] and theta["arc"].iloc[0] == "1-2"  # named by arc
    summary = _output(project_copy, "08_reporting", "inverse_routes", "route_agreement.csv")
    assert summary["observations"].iloc[0] == 58


def test_raise_mode_names_file_row_and_id(project_copy):
    def corrupt(tables):
        routes = tables["routes"]
        routes.loc[2, "origin"] = 5 if str(routes.loc[2, "origin"]) != "5" else 6

    params = _user_data(project_copy, corrupt)
    with pytest.raises(InverseInputError, match=r"routes.csv', row 2, id 'r00002': the route starts at node"):
        _run(project_copy, "inverse_routes", inverse_routes={**params, "on_invalid": "raise"})


def test_a_bad_network_file_names_its_row(project_copy):
    params = _user_data(project_copy)
    arcs = project_copy / "data" / "01_raw" / "inverse_routes" / "arcs.csv"
    table = pd.read_csv(arcs, dtype={"capacity": object})
    table.loc[4, "capacity"] = "lots"
    table.to_csv(arcs, index=False)
    with pytest.raises(NetworkInputError, match=r"arcs.csv', row 4: value 'lots' in column 'capacity'"):
        _run(project_copy, "inverse_routes", inverse_routes=params)


def test_a_missing_arc_attribute_stops_before_tuning(project_copy):
    params = _user_data(project_copy)
    with pytest.raises(Exception, match=r"arc attribute\(s\) \['toll_km'\]"):
        _run(project_copy, "inverse_routes", inverse_routes={**params, "model": {"cost_model": "shared",
                                                                                   "arc_features": ["toll_km"]}})


def test_parameters_validate():
    assert InverseRoutesParams().lambdas == [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]
    assert InverseRoutesParams(model={"lam": 0.5}).lambdas == [0.5]
    for bad in ({"model": {"cost_model": "per_link"}}, {"model": {"lam": -1}}, {"tuning": {"n_folds": 1}},
                {"modle": {}}):
        with pytest.raises((SpecError, ValueError)):
            InverseRoutesParams(**bad)
    assert InverseRoutesExampleParams().network == "auto"


def test_the_example_says_what_is_missing(monkeypatch, tmp_path):
    from mom_pipeline.pipelines.inverse_routes.nodes import example_network

    monkeypatch.setenv("MOM_NETWORKS_DIR", str(tmp_path))
    with pytest.raises(NetworkNotFound, match="MOM_NETWORKS_DIR"):
        example_network(InverseRoutesExampleParams(network="SiouxFalls"))
    network, _ = example_network(InverseRoutesExampleParams(network="auto", grid=(3, 3)))
    assert network.name == "grid-3x3"
