"""The batched shortest-route oracle against HiGHS on the real networks (zones, ties, negative
costs), and its errors and tie-breaking rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mom_pipeline.networks import (RouteOracleError, read_arc_table, read_tntp_network, shortest_routes,
                                   usable_arcs)
from mom_pipeline.networks.generate import grid_network
from mom_pipeline.networks.reference import highs_shortest_routes as highs_routes
from network_files import NET_FILES, network_file


def random_pairs(network, T, rng):
    ends = network.first_thru_node or network.n_nodes  # zones are the origins and destinations
    o = rng.integers(0, ends, T)
    d = (o + 1 + rng.integers(0, ends - 1, T)) % ends
    return o, d


def assert_simple_routes(network, routes, o, d, usable):
    """Every row is a simple path o -> d over usable arcs."""
    for t, route in enumerate(routes):
        arcs = np.flatnonzero(route)
        assert usable[t, arcs].all()
        balance = np.bincount(network.tails[arcs], minlength=network.n_nodes) - np.bincount(
            network.heads[arcs], minlength=network.n_nodes)
        expected = np.zeros(network.n_nodes)
        expected[o[t]], expected[d[t]] = 1, -1
        assert (balance == expected).all()
        assert len(network.route_nodes(route, o[t])) == arcs.size + 1


@pytest.mark.parametrize("name", list(NET_FILES))
def test_equals_highs_on_real_networks(name):
    network = read_tntp_network(network_file(name))
    rng = np.random.default_rng(1)
    T = 40
    o, d = random_pairs(network, T, rng)
    usable = usable_arcs(network, o, d)
    potential = rng.uniform(0.0, 1.0, (T, network.n_nodes))  # c + pi[tail] - pi[head]: negative arcs, no negative cycle
    shifted = rng.uniform(0.1, 1.0, (T, network.n_arcs)) + potential[:, network.tails] - potential[:, network.heads]
    assert (shifted < 0).any()
    for costs, unique in ((rng.uniform(0.1, 1.0, (T, network.n_arcs)), True),
                          (rng.integers(0, 3, (T, network.n_arcs)).astype(float), False),  # ties and zero costs
                          (shifted, True)):
        routes, value = shortest_routes(network, costs, o, d, usable, return_cost=True)
        reference, ref_value = highs_routes(network, costs, o, d, usable)
        np.testing.assert_allclose(value, ref_value, atol=1e-9)
        assert_simple_routes(network, routes, o, d, usable)
        if unique:
            np.testing.assert_array_equal(routes, np.round(reference))


def test_zones_are_not_passed_through():
    network = read_tntp_network(network_file("Anaheim"))
    rng = np.random.default_rng(2)
    o, d = random_pairs(network, 30, rng)
    costs = rng.uniform(0.1, 1.0, (30, network.n_arcs))
    costs[:, network.tails < network.first_thru_node] *= 1e-3  # zones are tempting shortcuts
    usable = usable_arcs(network, o, d)
    routes = shortest_routes(network, costs, o, d, usable)
    for t in range(30):
        inner = network.route_nodes(routes[t], o[t])[1:-1]
        assert all(v - 1 >= network.first_thru_node for v in inner)
    free = shortest_routes(network, costs, o, d)  # without the rule some route takes a shortcut
    assert (free != routes).any()


def test_zone_arcs_are_usable_from_the_origin_and_into_the_destination_only():
    network = read_tntp_network(network_file("Anaheim"))
    zones = network.first_thru_node
    o, d = np.array([0, 5]), np.array([3, 0])
    usable = usable_arcs(network, o, d)
    for t in range(2):
        out_of_zone, into_zone = network.tails < zones, network.heads < zones
        assert (usable[t, out_of_zone] == (network.tails[out_of_zone] == o[t])).all()
        assert (usable[t, into_zone] == (network.heads[into_zone] == d[t])).all()
        assert usable[t, ~out_of_zone & ~into_zone].all()
    # Without destinations (a one-to-all search): into every zone but the origin.
    one_to_all = usable_arcs(network, o)
    into_zone = network.heads < zones
    assert (one_to_all[0, into_zone] == (network.heads[into_zone] != 0)).all()


def test_ties_fewest_arcs_then_smallest_index_and_order_independent():
    network, _ = grid_network(3, 3)
    T = 5
    costs = np.ones((T, network.n_arcs))
    o, d = np.zeros(T, dtype=int), np.full(T, 8)
    routes = shortest_routes(network, costs, o, d)
    assert (routes.sum(axis=1) == 4).all() and (routes == routes[0]).all()
    costs[1] = 0.0  # every route costs 0: still the fewest arcs
    routes = shortest_routes(network, costs, o, d)
    assert routes[1].sum() == 4
    rng = np.random.default_rng(3)
    many = rng.integers(1, 3, (50, network.n_arcs)).astype(float)
    oo, dd = random_pairs(network, 50, rng)
    first = shortest_routes(network, many, oo, dd)
    perm = rng.permutation(50)
    np.testing.assert_array_equal(shortest_routes(network, many[perm], oo[perm], dd[perm]), first[perm])


def test_parallel_arcs_take_the_cheaper_one():
    table = pd.DataFrame({"arc": ["slow", "fast", "on"], "tail": [1, 1, 2], "head": [2, 2, 3]})
    network = read_arc_table(table)
    routes = shortest_routes(network, np.array([[2.0, 1.0, 1.0], [1.0, 1.0, 1.0]]), [0, 0], [2, 2])
    np.testing.assert_array_equal(routes, [[0, 1, 1], [1, 0, 1]])  # a tie goes to the smaller index


def test_errors_name_the_sample():
    network, _ = grid_network(2, 2)
    costs = np.ones((3, network.n_arcs))
    costs[2, :2] = -5.0  # arcs 1->2 and 2->1: a negative cycle in sample 2
    with pytest.raises(RouteOracleError, match="sample 2: .*negative cycle"):
        shortest_routes(network, costs, [0, 0, 0], [3, 3, 3])
    usable = np.ones((2, network.n_arcs), dtype=bool)
    usable[1, network.heads == 3] = False
    with pytest.raises(RouteOracleError, match="sample 1: destination 4 cannot be reached"):
        shortest_routes(network, costs[:2], [0, 0], [3, 3], usable)
    with pytest.raises(RouteOracleError, match="sample 0: .*NaN"):
        shortest_routes(network, np.full((1, network.n_arcs), np.nan), [0], [3])


def test_failures_can_be_returned_instead_of_raised():
    network, _ = grid_network(2, 2)
    costs = np.ones((3, network.n_arcs))
    costs[1, :2] = -5.0
    routes, value, failures = shortest_routes(network, costs, [0, 0, 0], [3, 3, 3], return_cost=True,
                                              return_failures=True)
    assert list(failures) == [1] and "negative cycle" in failures[1]
    assert routes[1].sum() == 0 and routes[0].sum() == 2 and value[2] == 2.0


@pytest.mark.parametrize("centroids", [None, 12])
def test_all_or_nothing_assignment_equals_the_routes_demand_weighted(centroids, monkeypatch):
    """One shortest-route tree per origin (in groups of origins) gives the flows of every pair's
    own tie-broken route; ties abound on a grid of equal free-flow times."""
    from mom_pipeline.networks import oracle
    from mom_pipeline.networks.generate import od_pairs

    network, trips = grid_network(5, 6, seed=3, centroids=centroids)
    o, d, demand = od_pairs(trips)
    cost = np.ones(network.n_arcs)  # every route of as many arcs ties
    cost[::7] = 1.5
    expected = demand @ shortest_routes(network, np.broadcast_to(cost, (o.size, network.n_arcs)), o, d,
                                        usable_arcs(network, o, d))
    monkeypatch.setattr(oracle, "ASSIGN_ORIGINS", 4)  # several groups
    flows = oracle.assign_all_or_nothing(network, cost, o, d, demand, lambda origins: usable_arcs(network, origins))
    np.testing.assert_allclose(flows, expected, rtol=1e-12, atol=1e-9)
    assert flows.sum() > 0


def test_all_or_nothing_assignment_names_an_unreachable_destination():
    from mom_pipeline.networks import oracle

    network = read_arc_table(pd.DataFrame({"tail": [1, 2], "head": [2, 3], "free_flow_time": [1.0, 1.0]}))
    with pytest.raises(RouteOracleError, match="cannot be reached"):
        oracle.assign_all_or_nothing(network, np.ones(2), [2], [0], [1.0])
