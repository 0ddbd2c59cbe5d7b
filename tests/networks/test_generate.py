"""The route generator: seeded, valid routes, and noise-free times exactly linear in both cost models."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mom_pipeline.networks import read_tntp_network, read_tntp_trips, shortest_routes
from mom_pipeline.networks.generate import ARC_FEATURES, FEATURES, RAIN_DELAY, generate_routes, grid_network, link_times
from mom_pipeline.networks.routes import validate_route_problem
from network_files import network_file, network_files


@pytest.fixture(scope="module")
def sioux_falls():
    network = read_tntp_network(network_file("SiouxFalls"))
    return network, read_tntp_trips(network_files("SiouxFalls")[1])


def test_seeded_and_deterministic(sioux_falls):
    first = generate_routes(*sioux_falls, n_observations=200, n_new=10, noise=0.1, seed=4)
    again = generate_routes(*sioux_falls, n_observations=200, n_new=10, noise=0.1, seed=4)
    other = generate_routes(*sioux_falls, n_observations=200, n_new=10, noise=0.1, seed=5)
    for name in ("features", "routes", "new_contexts", "new_routes"):
        pd.testing.assert_frame_equal(first[name], again[name])
    assert not first["routes"].equals(other["routes"])


def test_routes_are_valid_and_vary_with_context(sioux_falls):
    tables = generate_routes(*sioux_falls, n_observations=400, n_new=0, seed=0)
    problem, report = validate_route_problem(tables["network"], tables["routes"], tables["features"])
    assert len(report) == 0 and problem.n_samples == 400
    per_pair = tables["routes"].groupby(["origin", "destination"])["nodes"].nunique()
    assert per_pair.max() > 1  # the context changes some routes


def test_noise_free_times_are_linear_in_both_models(sioux_falls):
    tables = generate_routes(*sioux_falls, n_observations=50, n_new=0, seed=1)
    network, features = tables["network"], tables["features"]
    times = link_times(network, features, 0.0, np.random.default_rng(0))
    Z = np.column_stack([features[list(FEATURES)].to_numpy(), np.ones(50)])
    F = network.attributes[list(ARC_FEATURES)].to_numpy()
    theta = np.zeros((2, Z.shape[1]))
    theta[0, -1] = 1.0  # free-flow time x intercept
    theta[1, FEATURES.index("demand_index")] = 1.0
    theta[1, FEATURES.index("rain_x_demand_index")] = RAIN_DELAY
    np.testing.assert_allclose(times, (F @ theta @ Z.T).T, rtol=1e-12)
    routes = shortest_routes(network, times, tables["routes"]["origin"] - 1, tables["routes"]["destination"] - 1)
    problem, _ = validate_route_problem(network, tables["routes"], features)
    np.testing.assert_array_equal(routes, problem.X)


def test_zones_on_a_zoned_network():
    network = read_tntp_network(network_file("Berlin-Friedrichshain"))
    trips = read_tntp_trips(network_files("Berlin-Friedrichshain")[1])
    tables = generate_routes(network, trips, n_observations=100, n_new=5, seed=2)
    problem, report = validate_route_problem(tables["network"], tables["routes"], tables["features"])
    assert len(report) == 0 and (problem.origins < network.first_thru_node).all()


def test_grid_network_needs_no_file():
    network, trips = grid_network(3, 4)
    assert network.n_nodes == 12 and network.n_arcs == 2 * (3 * 3 + 2 * 4) and trips.shape == (12, 12)
    tables = generate_routes(network, trips, n_observations=30, n_new=3)
    assert len(tables["routes"]) == 30 and len(tables["new_routes"]) == 3


def test_grid_with_centroids_is_the_same_grid_with_fewer_zones():
    full, full_trips = grid_network(6, 7, seed=2)
    city, trips = grid_network(6, 7, seed=2, centroids=5)
    assert trips.shape == (5, 5) and full_trips.shape == (42, 42)
    # The same streets by label, with the same attributes; zones numbered first.
    streets = lambda net: dict(zip(net.arc_labels, net.attributes["free_flow_time"]))
    assert streets(city) == streets(full)
    assert sorted(city.node_labels[:5]) == [1, 11, 21, 32, 42]  # spread over the grid
    tables = generate_routes(city, trips, n_observations=60, n_new=0, seed=0)
    problem, report = validate_route_problem(tables["network"], tables["routes"], tables["features"])
    assert len(report) == 0 and problem.n_samples == 60
    assert set(tables["routes"]["origin"]) <= set(city.node_labels[:5])
    with pytest.raises(ValueError, match="centroids"):
        grid_network(3, 3, centroids=10)
