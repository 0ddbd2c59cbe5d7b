"""Exact shortest routes for a batch of cost vectors on one network (scipy.sparse.csgraph).

For sample t the route minimizes c_t'x over the routes from origin_t to destination_t that use
only the arcs usable[t] (TNTP zones: `network.usable_arcs`), i.e. the network LP
min c_t'x s.t. incidence x = e_o - e_d, x >= 0, x_a = 0 off usable[t].

* Samples whose usable costs are all >= 0 are solved together: one Dijkstra over a graph made
  of one copy of the network per sample (block diagonal, `min_only`: each copy is reached from
  its own origin only), in chunks of at most CHUNK_EDGES arcs.
* Samples with a negative usable cost are solved one by one with Bellman-Ford; a negative
  cycle (the LP is unbounded) raises RouteOracleError naming the sample, or, with
  return_failures, leaves that sample without a route and says why (a learned cost model can
  predict negative cycles for some contexts: held-out scoring counts them as not reproduced).
* Ties are broken by one rule, independent of the solver's visiting order: among the routes
  whose cost is within TIE_TOL of the optimum, the one with the fewest arcs; among those, walking
  back from the destination, the arc with the smallest index at each step.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import NegativeCycleError, bellman_ford, dijkstra

from .network import Network

# Arcs of one block-diagonal graph: small blocks stay in cache (Anaheim, 2 busy cores: 0.29 ms per sample
# at 50,000 arcs, 0.44-0.50 ms at 100,000-400,000, 0.53-0.67 ms at 10,000-25,000).
CHUNK_EDGES = 50_000
# An arc is on a shortest route when dist[tail] + c - dist[head] <= TIE_TOL * scale, scale =
# max(1, largest |cost| and |distance| of the sample): rounding of sums along a route stays far below.
TIE_TOL = 1e-9


class RouteOracleError(ValueError):
    """A sample whose shortest route does not exist (unreachable destination, negative cycle, bad costs)."""


def _as_samples(network: Network, costs, origins, destinations, usable):
    C = np.atleast_2d(np.asarray(costs, dtype=float))
    T, n = C.shape
    if n != network.n_arcs:
        raise ValueError(f"costs have {n} columns but the network has {network.n_arcs} arcs")
    o = np.broadcast_to(np.asarray(origins, dtype=np.int64), (T,))
    d = np.broadcast_to(np.asarray(destinations, dtype=np.int64), (T,))
    for name, nodes in (("origin", o), ("destination", d)):
        bad = np.flatnonzero((nodes < 0) | (nodes >= network.n_nodes))
        if bad.size:
            raise ValueError(f"sample {bad[0]}: {name} index {nodes[bad[0]]} is not a node (0..{network.n_nodes - 1})")
    same = np.flatnonzero(o == d)
    if same.size:
        raise RouteOracleError(f"sample {same[0]}: origin and destination are the same node "
                               f"{network.node_labels[o[same[0]]]}")
    U = np.ones((T, n), dtype=bool) if usable is None else np.broadcast_to(np.asarray(usable, dtype=bool), (T, n))
    bad = np.flatnonzero(~np.isfinite(np.where(U, C, 0.0)).all(axis=1))
    if bad.size:
        raise RouteOracleError(f"sample {bad[0]}: a usable arc's cost is NaN or infinite")
    return C, o, d, U


def _block_graph(network: Network, weights: np.ndarray, keep: np.ndarray) -> sp.csr_matrix:
    """One copy of the network per row of weights (S, n); arcs where keep is False left out.
    Parallel arcs are merged into one edge of the smallest weight."""
    S, n = weights.shape
    N = network.n_nodes
    pair_start, pair_order, pair_tail, pair_head = _pairs(network)
    W = np.where(keep, weights, np.inf)
    if pair_order is not None:
        W = np.minimum.reduceat(W[:, pair_order], pair_start, axis=1)
    offsets = (N * np.arange(S))[:, None]
    present = np.isfinite(W)
    rows = (pair_tail[None, :] + offsets)[present]
    cols = (pair_head[None, :] + offsets)[present]
    return sp.csr_matrix((W[present], (rows, cols)), shape=(S * N, S * N))


def _pairs(network: Network):
    """(start of each pair in pair_order, pair_order or None without parallel arcs, pair tails, pair heads)."""
    key = network.tails * network.n_nodes + network.heads
    if np.unique(key).size == key.size:
        return None, None, network.tails, network.heads
    order = np.argsort(key, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(key[order]) != 0])
    return starts, order, network.tails[order[starts]], network.heads[order[starts]]


def _chunks(T: int, n: int):
    size = max(1, CHUNK_EDGES // max(n, 1))
    return [np.arange(s, min(T, s + size)) for s in range(0, T, size)]


def _distances(network: Network, C, o, U, failures: dict) -> np.ndarray:
    """(T, N) shortest distances from each sample's origin (inf where unreachable); samples
    with a negative cycle get NaN rows and a reason in `failures`."""
    T, N = C.shape[0], network.n_nodes
    dist = np.empty((T, N))
    negative = (np.where(U, C, 0.0) < 0).any(axis=1)
    plain = np.flatnonzero(~negative)
    for chunk in _chunks(plain.size, C.shape[1]):
        s = plain[chunk]
        graph = _block_graph(network, C[s], U[s])
        dist[s] = dijkstra(graph, indices=o[s] + N * np.arange(s.size), min_only=True).reshape(s.size, N)
    for t in np.flatnonzero(negative):
        graph = _block_graph(network, C[t:t + 1], U[t:t + 1])
        try:
            dist[t] = bellman_ford(graph, indices=int(o[t]))
        except NegativeCycleError:
            dist[t] = np.nan
            failures[int(t)] = ("the costs have a negative cycle among the usable arcs, so the shortest-route LP is "
                                "unbounded (no shortest route exists)")
    return dist


def _hops(network: Network, tight: np.ndarray, o) -> np.ndarray:
    """(T, N) fewest arcs from the origin over tight arcs (inf where not reached)."""
    T, N = tight.shape[0], network.n_nodes
    hops = np.empty((T, N))
    ones = np.ones(tight.shape)
    for s in _chunks(T, tight.shape[1]):
        graph = _block_graph(network, ones[s], tight[s])
        hops[s] = dijkstra(graph, indices=o[s] + N * np.arange(s.size), unweighted=True,
                           min_only=True).reshape(s.size, N)
    return hops


def shortest_routes(network: Network, costs, origins, destinations, usable=None, *,
                    return_cost: bool = False, return_failures: bool = False):
    """(T, n) 0/1 shortest routes for costs (T, n), origins and destinations (T,) 0-based node
    indices, usable (T, n) bool or None (every arc).

    A sample without a shortest route (its destination cannot be reached over the usable arcs,
    or its costs have a negative cycle) raises RouteOracleError naming it; with return_failures
    its row is all zeros and {sample: reason} is returned too. Returns routes, then the route
    costs (T,) with return_cost, then the failures with return_failures.
    """
    C, o, d, U = _as_samples(network, costs, origins, destinations, usable)
    T = C.shape[0]
    failures: dict = {}
    dist = _distances(network, C, o, U, failures)
    for t in np.flatnonzero(np.isinf(dist[np.arange(T), d])):
        failures[int(t)] = (f"destination {network.node_labels[d[t]]} cannot be reached from origin "
                            f"{network.node_labels[o[t]]} over the usable arcs (TNTP zones are not passed through)")
    if failures and not return_failures:
        t = min(failures)
        more = f" ({len(failures) - 1} more sample(s) without a route)" if len(failures) > 1 else ""
        raise RouteOracleError(f"sample {t}: {failures[t]}{more}")
    routes = np.zeros(C.shape)
    good = np.setdiff1d(np.arange(T), list(failures))
    if good.size:
        routes[good] = _routes_of_distances(network, C[good], o[good], d[good], U[good], dist[good])
    out = (routes,)
    if return_cost:
        out += (np.einsum("tn,tn->t", np.where(routes > 0, C, 0.0), routes),)
    if return_failures:
        out += (failures,)
    return out if len(out) > 1 else routes


def _routes_of_distances(network: Network, C, o, d, U, dist) -> np.ndarray:
    """The tie-broken routes (module docstring) of samples whose destinations are reached."""
    eligible, hops = _eligible_arcs(network, C, o, U, dist)
    return _walk_back(network, eligible, o, d, hops[np.arange(C.shape[0]), d])


def _eligible_arcs(network: Network, C, o, U, dist) -> tuple[np.ndarray, np.ndarray]:
    """(T, n) the arcs a tie-broken route may take (tight, one hop further from the origin),
    and the (T, N) fewest tight hops from the origin."""
    tails, heads = network.tails, network.heads
    finite = np.where(np.isfinite(dist), dist, 0.0)
    scale = np.maximum(1.0, np.maximum(np.abs(np.where(U, C, 0.0)).max(axis=1), np.abs(finite).max(axis=1)))
    with np.errstate(invalid="ignore"):  # inf - inf at unreached nodes: not tight
        reduced = dist[:, tails] + C - dist[:, heads]
        tight = U & np.isfinite(dist[:, tails]) & (reduced <= TIE_TOL * scale[:, None])
    hops = _hops(network, tight, o)
    return tight & (hops[:, tails] == hops[:, heads] - 1), hops


def _previous_arcs(network: Network, eligible: np.ndarray) -> np.ndarray:
    """(T * N,) per (sample, node) the smallest eligible arc index into the node, -1 if none."""
    N = network.n_nodes
    t_idx, arcs = np.nonzero(eligible)  # row-major: for each sample, arcs in increasing order
    key = t_idx * N + network.heads[arcs]
    unique, first = np.unique(key, return_index=True)
    previous = np.full(eligible.shape[0] * N, -1, dtype=np.int64)
    previous[unique] = arcs[first]
    return previous


def _walk(network: Network, previous: np.ndarray, rows: np.ndarray, o, d, max_hops: int):
    """Yield (pairs still walking, their arcs) from each destination back to its origin over
    the `previous` arcs of sample row `rows` (one hop closer to the origin each step)."""
    N = network.n_nodes
    current, pairs = np.asarray(d).copy(), np.arange(len(rows))
    for _ in range(int(max_hops)):
        active = current != o
        if not active.any():
            break
        arc = previous[rows[active] * N + current[active]]
        yield pairs[active], arc
        current[active] = network.tails[arc]


def _walk_back(network: Network, eligible: np.ndarray, o, d, n_hops) -> np.ndarray:
    """Routes from the destination back to the origin over eligible arcs (one hop closer to the
    origin each step), taking the smallest arc index into each node."""
    T, n = eligible.shape
    routes = np.zeros((T, n))
    previous = _previous_arcs(network, eligible)
    for pairs, arc in _walk(network, previous, np.arange(T), o, d, np.max(n_hops, initial=0)):
        routes[pairs, arc] = 1.0
    return routes


#: Origins whose shortest-route trees one step of `assign_all_or_nothing` holds.
ASSIGN_ORIGINS = 64


def assign_all_or_nothing(network: Network, costs, origins, destinations, demand, usable=None) -> np.ndarray:
    """(n,) arc flows of the demand (P,) on each pair's tie-broken shortest route (the routes
    `shortest_routes` returns for these pairs under the one cost vector (n,)), found once per
    origin: no (pairs, arcs) table. usable: a function of origins -> (k, n) bool, or None.
    Unreachable destinations raise RouteOracleError as in `shortest_routes`."""
    c = np.asarray(costs, dtype=float)
    origins, destinations = np.asarray(origins, dtype=np.int64), np.asarray(destinations, dtype=np.int64)
    demand = np.asarray(demand, dtype=float)
    flows = np.zeros(network.n_arcs)
    unique = np.unique(origins)
    for start in range(0, unique.size, ASSIGN_ORIGINS):
        group = unique[start:start + ASSIGN_ORIGINS]
        C = np.broadcast_to(c, (group.size, c.size))
        o, U = group, np.ones(C.shape, dtype=bool) if usable is None else usable(group)
        failures: dict = {}
        dist = _distances(network, C, o, U, failures)
        if failures:
            t = min(failures)
            raise RouteOracleError(f"origin {network.node_labels[o[t]]}: {failures[t]}")
        pick = np.flatnonzero(np.isin(origins, group))
        rows = np.searchsorted(group, origins[pick])
        d = destinations[pick]
        unreached = np.flatnonzero(np.isinf(dist[rows, d]))
        if unreached.size:
            k = pick[unreached[0]]
            raise RouteOracleError(f"destination {network.node_labels[destinations[k]]} cannot be reached from origin "
                                   f"{network.node_labels[origins[k]]} over the usable arcs")
        eligible, hops = _eligible_arcs(network, C, o, U, dist)
        previous = _previous_arcs(network, eligible)
        for pairs, arc in _walk(network, previous, rows, o[rows], d, hops[rows, d].max(initial=0)):
            np.add.at(flows, arc, demand[pick[pairs]])
    return flows
