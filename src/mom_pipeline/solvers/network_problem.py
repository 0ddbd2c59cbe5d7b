"""Network MOM's problem: observed routes on one network (`NetworkSamples`), the route
potentials its equalities fix, and the weak-duality certificate of a solution.

The problem and its working-set method are described in `network_margin`. Ground floor:
numpy and scipy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

@dataclass(frozen=True)
class NetworkSamples:
    """Observed routes on one network: arc tails/heads (0-based), routes (T, n) bool, the rows
    (T, n) bool (usable arcs off the route, each with a margin constraint), features Z (T, d),
    arc features F (n, q) or None (per-arc model), and each route's destination and origin (T,)."""

    tails: np.ndarray
    heads: np.ndarray
    n_nodes: int
    routes: np.ndarray
    rows: np.ndarray
    Z: np.ndarray
    F: np.ndarray | None
    destinations: np.ndarray
    origins: np.ndarray

    @property
    def T(self) -> int:
        return self.routes.shape[0]

    @property
    def n(self) -> int:
        return self.routes.shape[1]

    @property
    def q(self) -> int:
        return self.n if self.F is None else self.F.shape[1]

    @property
    def d(self) -> int:
        return self.Z.shape[1]


def network_samples(tails, heads, n_nodes: int, routes, Z, F=None, usable=None) -> NetworkSamples:
    """Checked `NetworkSamples`: every route a simple path of usable arcs (one origin, one
    destination, in- and out-degree at most 1 elsewhere); its destination found from it."""
    tails, heads = np.asarray(tails, dtype=np.int64), np.asarray(heads, dtype=np.int64)
    routes = np.asarray(routes)
    Z = np.asarray(Z, dtype=float)
    if routes.ndim != 2 or routes.shape[1] != tails.size or tails.shape != heads.shape:
        raise ValueError(f"routes must be (T, {tails.size}) for {tails.size} arcs; got {routes.shape}")
    if Z.ndim != 2 or Z.shape[0] != routes.shape[0]:
        raise ValueError(f"Z must be (T, d) with T = {routes.shape[0]} routes; got {Z.shape}")
    if not np.all((routes == 0) | (routes == 1)):
        raise ValueError("routes must be 0/1 arc incidences")
    if tails.size and (min(tails.min(), heads.min()) < 0 or max(tails.max(), heads.max()) >= n_nodes):
        raise ValueError(f"arc end points must be node indices in [0, {n_nodes})")
    routes = routes.astype(bool)
    usable = np.ones_like(routes) if usable is None else np.asarray(usable, dtype=bool)
    if usable.shape != routes.shape:
        raise ValueError(f"usable must be {routes.shape}; got {usable.shape}")
    bad = np.flatnonzero((routes & ~usable).any(axis=1))
    if bad.size:
        raise ValueError(f"sample {bad[0]}: its route uses an arc marked unusable")
    incidence = incidence_matrix(tails, heads, n_nodes)
    balance = np.asarray(incidence @ routes.T.astype(float)).T  # (T, nodes): out - in
    out_degree = np.asarray(_out_degree_matrix(tails, n_nodes) @ routes.T.astype(float)).T
    origins, destinations = balance.argmax(axis=1), balance.argmin(axis=1)
    T = routes.shape[0]
    simple = ((balance[np.arange(T), origins] == 1) & (balance[np.arange(T), destinations] == -1)
              & (np.abs(balance).sum(axis=1) == 2) & (out_degree.max(axis=1, initial=0) <= 1))
    bad = np.flatnonzero(~simple)
    if bad.size:
        raise ValueError(f"sample {bad[0]}: its route is not a simple path from one origin to one destination")
    if F is not None:
        F = np.asarray(F, dtype=float)
        if F.ndim != 2 or F.shape[0] != tails.size or not np.isfinite(F).all():
            raise ValueError(f"arc features must be a finite ({tails.size}, q) array; got {F.shape}")
    return NetworkSamples(tails, heads, int(n_nodes), routes, usable & ~routes, Z, F, destinations, origins)


def incidence_matrix(tails, heads, n_nodes: int) -> sp.csr_matrix:
    """Node-arc incidence (nodes, arcs): +1 at the tail, -1 at the head."""
    n = tails.size
    return sp.csr_matrix((np.r_[np.ones(n), -np.ones(n)], (np.r_[tails, heads], np.r_[np.arange(n), np.arange(n)])),
                         shape=(n_nodes, n))


def _out_degree_matrix(tails, n_nodes: int) -> sp.csr_matrix:
    return sp.csr_matrix((np.ones(tails.size), (tails, np.arange(tails.size))), shape=(n_nodes, tails.size))


def predicted_costs(Theta: np.ndarray, data: NetworkSamples) -> np.ndarray:
    """c_t = F Theta z_t for every sample, (T, n)."""
    C = data.Z @ Theta.T
    return C if data.F is None else C @ data.F.T


def route_order(data: NetworkSamples) -> list[np.ndarray]:
    """Each route's arcs from its origin to its destination."""
    next_arc = np.full((data.T, data.n_nodes), -1, dtype=np.int64)
    t_index, arcs = np.nonzero(data.routes)
    next_arc[t_index, data.tails[arcs]] = arcs
    heads_in = np.zeros((data.T, data.n_nodes), dtype=bool)
    heads_in[t_index, data.heads[arcs]] = True
    tails_out = next_arc >= 0
    origins = np.argmax(tails_out & ~heads_in, axis=1)
    orders = []
    for t in range(data.T):
        node, order = origins[t], []
        while next_arc[t, node] >= 0:
            order.append(next_arc[t, node])
            node = data.heads[next_arc[t, node]]
        orders.append(np.asarray(order, dtype=np.int64))
    return orders


def route_potentials(C: np.ndarray, data: NetworkSamples, orders: list[np.ndarray]) -> np.ndarray:
    """(T, nodes): on each route's nodes its predicted cost from there to the destination
    (the potentials the route's equalities fix, destination 0); NaN elsewhere."""
    y = np.full((data.T, data.n_nodes), np.nan)
    for t, order in enumerate(orders):
        to_go = np.cumsum(C[t, order][::-1])[::-1]
        y[t, data.tails[order]] = to_go
        y[t, data.destinations[t]] = 0.0
    return y


def route_flows(flows: np.ndarray, data: NetworkSamples, orders: list[np.ndarray]) -> tuple[np.ndarray, float]:
    """The circulation completed on the routes: off-route flows f (T, n) as given, route arcs
    the flow that conserves it at every route node, found along the route. Returns the whole
    circulation (T, n) and the largest imbalance left at nodes off the routes."""
    incidence = incidence_matrix(data.tails, data.heads, data.n_nodes)
    imbalance = np.asarray(incidence @ flows.T).T  # (T, nodes): out - in of the off-route flows
    total = flows.copy()
    for t, order in enumerate(orders):
        # Route arc k leaves node v_k: its flow makes v_k balanced given what enters from arc k-1.
        route_nodes = data.tails[order]
        carry = -np.cumsum(imbalance[t, route_nodes])
        total[t, order] = carry
        imbalance[t, route_nodes] = 0.0
        imbalance[t, data.destinations[t]] = 0.0
    return total, float(np.abs(imbalance).max(initial=0.0))


def network_margin_objective(Theta: np.ndarray, potentials: np.ndarray, data: NetworkSamples, lam: float):
    """(objective with optimal slacks, largest route-equality residual) at (Theta, potentials)."""
    C = predicted_costs(Theta, data)
    reduced = C - potentials[:, data.tails] + potentials[:, data.heads]
    hinge = np.where(data.rows, np.maximum(0.0, 1.0 - reduced), 0.0)
    residual = float(np.abs(np.where(data.routes, reduced, 0.0)).max(initial=0.0))
    return float(0.5 * lam * np.sum(Theta**2) + hinge.sum(axis=1).mean()), residual


def network_margin_certificate(Theta: np.ndarray, potentials: np.ndarray, flows: np.ndarray, data: NetworkSamples,
                               lam: float, orders: list[np.ndarray] | None = None) -> dict:
    """Weak-duality certificate of (Theta, potentials) with off-route flows `flows` (T, n) in [0, 1].

    The Lagrange dual: circulations omega_t (off-route flows in [0, 1] on the rows, free on the
    route) give D = (1/T) sum of the row flows - (lam/2) ||Theta(omega)||^2 with
    Theta(omega) = (1/(lam T)) sum_t F' omega_t z_t', a lower bound on the optimum.
    """
    orders = route_order(data) if orders is None else orders
    primal, equality = network_margin_objective(Theta, potentials, data, lam)
    f = np.where(data.rows, np.clip(flows, 0.0, 1.0), 0.0)
    omega, imbalance = route_flows(f, data, orders)
    G = omega.T @ data.Z / (lam * data.T)               # (n, d)
    Theta_dual = G if data.F is None else data.F.T @ G
    dual = float(f.sum() / data.T - 0.5 * lam * np.sum(Theta_dual**2))
    gap = primal - dual
    return dict(objective=primal, lower_bound=dual, gap=gap, relative_gap=gap / max(1e-6, abs(primal)),
                equality_residual=equality, flow_residual=imbalance,
                stationarity=float(np.linalg.norm(Theta - Theta_dual) / max(1.0, np.linalg.norm(Theta))))


def incidence_network(A) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(tails, heads, n_nodes) when the constraint matrix A (m, n) is a node-arc incidence
    matrix (every column one +1 and one -1), possibly with one node's row dropped (columns with
    a single entry: their other end is node m); None otherwise.

    Which sign marks the tail does not matter to MOM: reversing every arc and every route
    gives the same problem with the potentials negated. Here the -1 marks the tail (the
    convention of `lp.GridShortestPath`)."""
    A = np.asarray(A.toarray() if sp.issparse(A) else A, dtype=float)
    if A.ndim != 2 or not np.isin(A, (-1.0, 0.0, 1.0)).all():
        return None
    m, n = A.shape
    plus, minus = (A == 1).sum(axis=0), (A == -1).sum(axis=0)
    if not (np.all(plus <= 1) and np.all(minus <= 1) and np.all(plus + minus >= 1)):
        return None
    tails = np.where(minus == 1, np.argmax(A == -1, axis=0), m)
    heads = np.where(plus == 1, np.argmax(A == 1, axis=0), m)
    return tails.astype(np.int64), heads.astype(np.int64), m + int(np.any(plus + minus == 1))
