"""The separation step of network MOM (solvers.network_separation.relax) against scipy's
shortest paths, and its negative-cycle detection."""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import johnson

from mom_pipeline.solvers.network_margin import network_samples, route_order, route_potentials
from mom_pipeline.solvers.network_margin import VIOLATION_TOL
from mom_pipeline.solvers.network_separation import relax

from test_network_margin import two_way_network


def _reference_potentials(lengths_t, fixed_t, tails, heads, n_nodes):
    """The largest potentials y <= y[head] + length on every row with the route's fixed: the
    shortest distance from each node to a super sink reached from route node r at cost y[r]
    (johnson: lengths may be negative)."""
    route_nodes = np.flatnonzero(~np.isnan(fixed_t))
    usable = np.isfinite(lengths_t)
    free = np.isnan(fixed_t)
    # Edge tail -> head of the row's length, leaving free nodes only (route nodes are fixed).
    keep = usable & free[tails]
    sink = n_nodes
    u = np.r_[tails[keep], route_nodes]
    v = np.r_[heads[keep], np.full(route_nodes.size, sink)]
    # Every path ends with one sink edge: shifting those by 1 keeps the destination's edge
    # (potential 0) from being an explicit zero, which csgraph would drop.
    w = np.r_[lengths_t[keep], fixed_t[route_nodes] + 1.0]
    assert (w != 0).all()
    # Parallel arcs: the shortest one (a sparse matrix would sum them).
    ranked = np.lexsort((w, v, u))
    first = ranked[np.r_[True, (np.diff(u[ranked]) != 0) | (np.diff(v[ranked]) != 0)]]
    graph = sp.csr_matrix((w[first], (u[first], v[first])), shape=(n_nodes + 1, n_nodes + 1))
    distance = johnson(graph, directed=True)[:, sink] - 1.0
    return np.where(free, distance[:n_nodes], fixed_t)


def test_relaxed_potentials_are_the_shortest_distances_to_the_route():
    Z, X, tails, heads, n_nodes, rng = two_way_network(seed=3, T=30)
    data = network_samples(tails, heads, n_nodes, X, Z)
    C = rng.uniform(1.5, 4.0, X.shape)  # lengths c - 1 > 0: no negative cycle
    fixed = route_potentials(C, data, route_order(data))
    none = np.zeros_like(data.rows)
    relaxation = relax(C, np.zeros_like(C), data, fixed, none, 0.0, 1e-12)
    lengths = np.where(data.rows, C - 1.0, np.inf)
    for t in range(data.T):
        reference = _reference_potentials(lengths[t], fixed[t], tails, heads, n_nodes)
        assert np.allclose(relaxation.potentials[t], reference, rtol=1e-12, atol=1e-12)
    # A detour shorter than the route's cost-to-go is reported, with the arcs that make it.
    route_tail = ~np.isnan(fixed[:, tails])
    violated = route_tail & (lengths + relaxation.potentials[:, heads] < np.where(route_tail, fixed[:, tails], 0) - 1e-9)
    assert 0 < violated.any(axis=1).sum() < data.T  # both kinds of sample occur
    assert (relaxation.feasible == ~violated.any(axis=1)).all()
    assert (relaxation.add[violated]).all()


def test_a_negative_cycle_among_free_nodes_is_found_and_its_arcs_added():
    Z, X, tails, heads, n_nodes, rng = two_way_network(seed=1, T=12)
    data = network_samples(tails, heads, n_nodes, X, Z)
    C = rng.uniform(1.5, 4.0, X.shape)
    fixed = route_potentials(C, data, route_order(data))
    # In sample 0, a two-way road between two free nodes gets cost 0.2 both ways: lengths
    # c - 1 = -0.8 around it, a negative cycle the route never touches.
    free = np.flatnonzero(np.isnan(fixed[0]))
    pair = next(a for a in range(len(tails)) if tails[a] in free and heads[a] in free)
    back = np.flatnonzero((tails == heads[pair]) & (heads == tails[pair]))[0]
    C[0, [pair, back]] = 0.2
    relaxation = relax(C, np.zeros_like(C), data, fixed, np.zeros_like(data.rows), 0.0, 1e-12)
    assert not relaxation.feasible[0]
    assert relaxation.add[0, pair] and relaxation.add[0, back]
    # The other samples are untouched by it.
    clean = relax(np.delete(C, 0, axis=0), np.zeros((data.T - 1, data.n)),
                  network_samples(tails, heads, n_nodes, X[1:], Z[1:]), fixed[1:], np.zeros_like(data.rows[1:]),
                  0.0, 1e-12)
    assert (clean.feasible == relaxation.feasible[1:]).all()
    assert (clean.add == relaxation.add[1:]).all()


def test_a_small_violation_under_large_route_potentials_is_reported():
    """The tolerance is relative to the potential a row would lower, not to that potential
    times the largest one: with route potentials near 1e3 a row 1e-4 short of its margin is
    a violation (at small lam the costs, and so the potentials, are that large)."""
    Z, X, tails, heads, n_nodes, rng = two_way_network(seed=3, T=30)
    data = network_samples(tails, heads, n_nodes, X, Z)
    C = 1e3 * rng.uniform(1.5, 4.0, X.shape)
    orders = route_order(data)
    fixed = route_potentials(C, data, orders)
    # A row between two route nodes, 1e-4 short of its margin: c = y_tail - y_head + 1 - 1e-4.
    on_route = ~np.isnan(fixed)
    candidates = np.argwhere(data.rows & on_route[:, tails] & on_route[:, heads])
    t, a = candidates[0]
    C[t, a] = fixed[t, tails[a]] - fixed[t, heads[a]] + 1.0 - 1e-4
    fixed = route_potentials(C, data, orders)  # the row is off the route: the route's values stay
    assert np.nanmax(np.abs(fixed[t])) > 1e3
    relaxation = relax(C, np.zeros_like(C), data, fixed, np.zeros_like(data.rows), 0.0, VIOLATION_TOL)
    assert relaxation.add[t, a]
    assert not relaxation.feasible[t]
