"""Route validation: each kind of bad route rejected with file, row and id; ids matched to features."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mom_pipeline.inverse.schema import InverseInputError
from mom_pipeline.networks import read_arc_table, read_tntp_network
from mom_pipeline.networks.routes import validate_route_contexts, validate_route_problem
from network_files import network_file

LONG = "1 117 116 115 114 113 183 182 181 180 179 178 177 176 175 174 173 172 171 170 169 168 409 408 407 416 23"  # the free-flow shortest route 1 -> 23 on Anaheim
FILES = {"routes": "data/routes.csv", "features": "data/features.csv"}


@pytest.fixture(scope="module")
def anaheim():
    return read_tntp_network(network_file("Anaheim"))


def features_of(ids):
    return pd.DataFrame({"id": ids, "rain": np.arange(len(ids), dtype=float) % 2})


def test_good_routes_become_incidence(anaheim):
    good = pd.DataFrame({"id": ["a", "b"], "origin": [1, 2], "destination": [23, 87],
                         "nodes": [LONG, "2 87"]})
    problem, report = validate_route_problem(anaheim, good, features_of(["a", "b"]), file_names=FILES)
    assert len(report) == 0 and problem.X.shape == (2, 914)
    assert problem.X[1].sum() == 1 and anaheim.arc_labels[np.flatnonzero(problem.X[1])[0]] == "2-87"
    assert problem.feature_names == ("rain", "intercept") and list(problem.origins) == [0, 1]


BAD = [  # (row of routes, reason words)
    ({"origin": 1, "destination": 23, "nodes": "1 117 999 23"}, "node '999' is not in the network"),
    ({"origin": 1, "destination": 23, "nodes": "1 117 23"}, "no arc 117-23"),
    ({"origin": 1, "destination": 23, "arcs": "1-117 116-115 115-114"}, "not connected"),
    ({"origin": 2, "destination": 23, "nodes": LONG}, "starts at node 1, not at its origin 2"),
    ({"origin": 1, "destination": 24, "nodes": LONG}, "ends at node 23, not at its destination 24"),
    ({"origin": 1, "destination": 23, "nodes": LONG.replace("409 408", "409 408 409 408", 1)}, "visits node 409 twice"),
    ({"origin": 5, "destination": 3, "nodes": "5 165 X"}, "node 'X'"),
    ({"origin": 1, "destination": 500, "nodes": "1 117"}, "destination '500' is not a node"),
    ({"origin": 1, "destination": 1, "nodes": "1"}, "same node"),
    ({"origin": 1, "destination": 23, "nodes": ""}, "fewer than two nodes"),
]


@pytest.mark.parametrize("bad, words", BAD)
def test_each_bad_route_is_rejected_with_file_row_and_id(anaheim, bad, words):
    column = "arcs" if "arcs" in bad else "nodes"
    good = {"id": "ok", "origin": 2, "destination": 87, column: "2 87" if column == "nodes" else "2-87"}
    routes = pd.DataFrame([good, {"id": "bad7", **bad}])
    problem, report = validate_route_problem(anaheim, routes, features_of(["ok", "bad7"]), on_invalid="report",
                                             file_names=FILES)
    assert list(problem.ids) == ["ok"]
    assert report.to_dict("records")[0]["id"] == "bad7"
    assert report["file"].iloc[0] == "data/routes.csv" and report["row"].iloc[0] == 1
    assert words in report["reason"].iloc[0]
    with pytest.raises(InverseInputError, match=r"file 'data/routes.csv', row 1, id 'bad7'"):
        validate_route_problem(anaheim, routes, features_of(["ok", "bad7"]), on_invalid="raise", file_names=FILES)


def test_route_through_a_zone_is_rejected(anaheim):
    # zone 1 connects to 117 and back: 2 -> ... -> 1 -> ... is a route through zone 1
    into = [a for a in anaheim.arc_labels if a.endswith("-1")]
    assert into, "Anaheim has arcs into zone 1"
    via = into[0].split("-")[0]
    routes = pd.DataFrame({"id": ["z"], "origin": [via], "destination": [117], "nodes": [f"{via} 1 117"]})
    if "1-117" not in set(anaheim.arc_labels):
        pytest.skip("no arc 1-117")
    _, report = validate_route_problem(anaheim, pd.concat([routes, pd.DataFrame(
        {"id": ["ok"], "origin": [2], "destination": [87], "nodes": ["2 87"]})]), features_of(["z", "ok"]),
        on_invalid="report", file_names=FILES)
    assert "passes through zone node 1" in report["reason"].iloc[0] and report["id"].iloc[0] == "z"


def test_ids_must_match_features_and_be_unique(anaheim):
    routes = pd.DataFrame({"id": ["a", "a", "b", "c"], "origin": [2] * 4, "destination": [87] * 4,
                           "nodes": ["2 87"] * 4})
    problem, report = validate_route_problem(anaheim, routes, features_of(["a", "b", "d"]), on_invalid="report",
                                             file_names=FILES)
    assert list(problem.ids) == ["b"]
    reasons = dict(zip(report["id"], report["reason"]))
    assert "appears in rows [0, 1]" in reasons["a"]
    assert "no row for id 'c' in data/features.csv" in reasons["c"]
    assert "no row for id 'd' in data/routes.csv" in reasons["d"]
    assert len(report) == 3  # nothing dropped without a row in the report


def test_parallel_arcs_need_an_arc_list():
    network = read_arc_table(pd.DataFrame({"arc": ["x", "y", "z"], "tail": [1, 1, 2], "head": [2, 2, 3]}))
    routes = pd.DataFrame({"id": ["p"], "origin": [1], "destination": [3], "nodes": ["1 2 3"]})
    with pytest.raises(InverseInputError, match="parallel arcs"):
        validate_route_problem(network, routes, features_of(["p"]))
    problem, _ = validate_route_problem(network, routes.drop(columns="nodes").assign(arcs="y z"), features_of(["p"]))
    assert problem.X.tolist() == [[0.0, 1.0, 1.0]]


def test_new_contexts_are_checked(anaheim):
    table = pd.DataFrame({"id": ["n1", "n2"], "origin": [1, 1], "destination": [23, 9999], "rain": [0.0, 1.0]})
    with pytest.raises(InverseInputError, match=r"file 'new.csv', row 1, id 'n2': destination '9999'"):
        validate_route_contexts(anaheim, table, ("rain", "intercept"), file_name="new.csv")
    ids, Z, o, d = validate_route_contexts(anaheim, table.iloc[:1], ("rain", "intercept"))
    assert Z.tolist() == [[0.0, 1.0]] and (o[0], d[0]) == (0, 22)
