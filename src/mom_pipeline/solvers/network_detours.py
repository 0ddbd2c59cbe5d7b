"""MOM from observed routes, per-arc model, by a working set of detour cycles.

The per-arc problem of `network_margin` (Theta (n, d), c_t = Theta z_t) with the free node
potentials eliminated: the potentials of sample t exist exactly when every path p of usable
off-route arcs from a route node u to a route node v satisfies

    sum_{a in p} (c_ta - 1 + s_ta) >= y_t[u] - y_t[v]     (y_t: the route's cost to go)

and every cycle of off-route arcs has a nonnegative sum of c - 1 + s. Written on the cycle
chi = p - (the route from u to v) (or + the route from v to u when v comes first), each is
one row chi'(c_t) + sum_{a in p} s_ta >= |p|: no potentials, no route equalities. Only the
cycles that carry dual flow at the optimum matter (tens per sample); the separation finds the
violated ones (`network_separation`'s Bellman-Ford from the route nodes: a violated row into a
route node and its head's predecessor chain are one violated detour). Reduced costs do not see
the part of Theta outside the cycle space, so Theta = U W with U an orthonormal basis of it
(n - nodes + components columns) and ||Theta|| = ||W||.

Each restricted QP goes to `detour_ipm`. When the separation finds nothing new, the restricted
optimum extended by zero slacks is feasible for the whole problem at the same objective: the
optimum. It is certified independently (`network_margin_certificate`): the relaxed potentials
give the primal objective, the rows' multipliers summed on each arc give the flows of the
Lagrange-dual bound.

Ground floor: numpy and scipy only.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import scipy.sparse as sp

from .detour_ipm import DetourBlocks, detour_qp
from .network_problem import (NetworkSamples, network_margin_certificate, predicted_costs, route_order,
                              route_potentials)
from .network_separation import _frontier_sweeps, feasible_potentials
from .result import SolverResult

logger = logging.getLogger(__name__)

VIOLATION_TOL = 1e-10
MAX_ROUNDS = 100
#: A fit logs its rounds at INFO once it has run this many seconds (DEBUG before).
PROGRESS_AFTER = 10.0
#: The first working set: the detours the separation finds at costs of INITIAL_COST per arc
#: (every off-route arc then has length INITIAL_COST - 1: the detours with fewer arcs than
#: INITIAL_COST times their stretch of route).
INITIAL_COST = 2.0
#: A fit of at least PILOT_FACTOR * PILOT_MIN_SAMPLES samples starts from a pilot: the same fit
#: on every PILOT_FACTOR-th sample, whose working detours, and the detours within PILOT_BAND
#: of their margin at its optimum on every sample, are the first working set.
PILOT_FACTOR = 8
PILOT_MIN_SAMPLES = 30
PILOT_BAND = 0.0


class DetourSet:
    """The working detours of every sample: each an off-route path (arc array) and its cycle
    (arc -> +-1), kept once."""

    def __init__(self, data: NetworkSamples, orders: list[np.ndarray]):
        self.data, self.orders = data, orders
        T, N = data.T, data.n_nodes
        self.position = np.full((T, N), -1, dtype=np.int64)
        for t, order in enumerate(orders):
            self.position[t, data.tails[order]] = np.arange(order.size)
            self.position[t, data.destinations[t]] = order.size
        self.paths: list[list[np.ndarray]] = [[] for _ in range(T)]
        self.cycles: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(T)]
        self.ends: list[list[tuple[int, int]]] = [[] for _ in range(T)]
        self._seen: list[set] = [set() for _ in range(T)]

    def add(self, t: int, path: np.ndarray, start: int, end: int) -> bool:
        """Add the detour `path` of sample t from route node `start` to route node `end`
        (start == end == -1: a cycle of off-route arcs). False when it is already there."""
        key = tuple(path.tolist())
        if key in self._seen[t]:
            return False
        self._seen[t].add(key)
        arcs, signs = [path], [np.ones(path.size)]
        if start >= 0 and start != end:
            order = self.orders[t]
            u, v = self.position[t, start], self.position[t, end]
            if v > u:
                arcs.append(order[u:v])
                signs.append(-np.ones(v - u))
            else:
                arcs.append(order[v:u])
                signs.append(np.ones(u - v))
        self.paths[t].append(path)
        self.ends[t].append((start, end))
        self.cycles[t].append((np.concatenate(arcs), np.concatenate(signs)))
        return True

    @property
    def size(self) -> int:
        return sum(len(p) for p in self.paths)

    def blocks(self, U: np.ndarray) -> tuple[DetourBlocks, list[np.ndarray]]:
        """The detour QP's padded blocks (P in U's coordinates) and each sample's slack arcs."""
        data = self.data
        T, n, q = data.T, data.n, U.shape[1]
        K = max(1, max(len(p) for p in self.paths))
        slack_arcs = [np.unique(np.concatenate(p)) if p else np.zeros(0, dtype=np.int64) for p in self.paths]
        A = max(1, max(a.size for a in slack_arcs))
        rows, cols, vals, which = [], [], [], []
        for t in range(T):
            for k, (arcs, signs) in enumerate(self.cycles[t]):
                rows.append(np.full(arcs.size, len(which)))
                cols.append(arcs)
                vals.append(signs)
                which.append((t, k))
        X = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(len(which), n))
        projected = np.asarray(X @ U)
        P, C, h = np.zeros((T, K, q)), np.zeros((T, K, A)), np.full((T, K), -1.0)
        which = np.asarray(which)
        P[which[:, 0], which[:, 1]] = projected
        for t in range(T):
            for k, path in enumerate(self.paths[t]):
                local = np.searchsorted(slack_arcs[t], path)
                C[t, k, local] = 1.0
                h[t, k] = path.size
        rows = np.array([len(p) for p in self.paths])
        slacks = np.array([a.size for a in slack_arcs])
        return DetourBlocks(P, C, h, data.Z, rows, slacks), slack_arcs


def violated_detours(C: np.ndarray, S: np.ndarray, data: NetworkSamples, fixed: np.ndarray, detours: DetourSet,
                     tol: float = VIOLATION_TOL, band: float = 0.0) -> tuple[int, int, np.ndarray]:
    """Bellman-Ford from the route nodes over every row (lengths c - 1 + s); adds each
    violated detour (a row into a route node that would lower its potential, with its head's
    predecessor chain) and each negative cycle among free nodes; with `band`, the detours
    within band per arc of their margin too. Returns (detours added,
    samples with a violation, the relaxed potentials)."""
    T, n = C.shape
    N = data.n_nodes
    lengths = np.where(data.rows, C - 1.0 - band + S, np.inf)
    on_route = ~np.isnan(fixed)
    x = np.where(on_route, fixed, np.inf)
    pred = np.full((T, N), -1, dtype=np.int64)
    _, cycling, cycle_node = _frontier_sweeps(x, pred, lengths, on_route, data, tol, N + 1)
    reach = x[:, data.heads] + lengths
    tail_fixed = on_route[:, data.tails]
    tail_value = np.where(tail_fixed, x[:, data.tails], np.inf)
    violated = tail_fixed & np.isfinite(reach) & (reach < tail_value - tol * np.maximum(
        1.0, np.abs(np.where(np.isfinite(tail_value), tail_value, 0.0))))
    added = 0
    vt, va = np.nonzero(violated)
    for t, a in zip(vt.tolist(), va.tolist()):
        path, node = [a], int(data.heads[a])
        for _ in range(N):
            arc = pred[t, node]
            if arc < 0:
                break
            path.append(int(arc))
            node = int(data.heads[arc])
        if not on_route[t, node]:
            continue  # a chain into a negative cycle: the cycle is added below
        added += detours.add(t, np.asarray(path, dtype=np.int64), int(data.tails[a]), node)
    for t in np.flatnonzero(cycling).tolist():
        cycle = _predecessor_cycle(pred[t], data, int(cycle_node[t]))
        if cycle is not None:
            added += detours.add(t, cycle, -1, -1)
    infeasible = int((violated.any(axis=1) | cycling).sum())
    return added, infeasible, x


def _predecessor_cycle(pred_t: np.ndarray, data: NetworkSamples, start: int) -> np.ndarray | None:
    """The arcs of a cycle of one sample's predecessor graph reached from `start`."""
    if start < 0:
        starts = np.flatnonzero(pred_t >= 0)
        if not starts.size:
            return None
        start = int(starts[0])
    node = start
    for _ in range(data.n_nodes):
        if pred_t[node] < 0:
            return None
        node = int(data.heads[pred_t[node]])
    first, arcs = node, []
    while True:
        arc = int(pred_t[node])
        arcs.append(arc)
        node = int(data.heads[arc])
        if node == first:
            return np.asarray(arcs, dtype=np.int64)


def cycle_space_basis(data: NetworkSamples) -> np.ndarray:
    """An orthonormal basis (n, q) of the incidence matrix's null space."""
    import scipy.linalg

    from .network_problem import incidence_matrix

    return scipy.linalg.null_space(incidence_matrix(data.tails, data.heads, data.n_nodes).toarray())


def solve_network_detours(data: NetworkSamples, lam: float, tol: float = VIOLATION_TOL,
                          max_rounds: int = MAX_ROUNDS, warm: bool = False) -> SolverResult:
    """The exact per-arc MOM optimum on a network LP by the working set of detour cycles
    (module docstring). Returns a `SolverResult` as `solve_network_margin`: solution (Theta,
    potentials, row flows), the certificate, iterations = rounds. warm: start each round's QP
    from the previous round's optimum (off by default: Sioux Falls, T = 1,000: 11 rounds and
    263 interior-point iterations against 9 and 200 cold, 1.3x the CPU; record 030)."""
    if data.F is not None:
        raise ValueError("the detour working set solves the per-arc model (no arc features)")
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be a positive finite number; got {lam}")
    started = time.perf_counter()
    orders = route_order(data)
    U = cycle_space_basis(data)
    detours = DetourSet(data, orders)
    pilot = _start(data, lam, orders, detours, tol, max_rounds, warm)
    T = data.T
    history = []
    previous = None
    for round_ in range(1, max_rounds + 1):
        blocks, slack_arcs = detours.blocks(U)
        start = None
        if previous is not None and warm:
            W_old, S_old, beta_old = previous
            s0, beta0 = np.zeros((T, blocks.A)), np.zeros((T, blocks.K))
            for t in range(T):
                s0[t, :slack_arcs[t].size] = S_old[t, slack_arcs[t]]
            k = min(beta_old.shape[1], blocks.K)
            beta0[:, :k] = beta_old[:, :k]
            start = (W_old, s0, beta0)
        result = detour_qp(blocks, lam, 1.0 / T, start=start)
        W, s = result.solution
        beta = result.extra["multipliers"]
        Theta = U @ W
        S = np.zeros((T, data.n))
        flows = np.zeros((T, data.n))
        arc_flow = blocks.slack_pull(beta) * T
        for t in range(T):
            k = slack_arcs[t].size
            S[t, slack_arcs[t]] = np.maximum(s[t, :k], 0.0)
            flows[t, slack_arcs[t]] = np.clip(arc_flow[t, :k], 0.0, 1.0)
        previous = (W, S, beta)
        C = predicted_costs(Theta, data)
        fixed = route_potentials(C, data, orders)
        added, infeasible, relaxed = violated_detours(C, S, data, fixed, detours, tol)
        history.append(dict(round=round_, detours=detours.size, added=added, infeasible_samples=infeasible,
                            qp_iterations=result.iterations, rows_per_block=blocks.K, slacks_per_block=blocks.A))
        logger.log(logging.INFO if time.perf_counter() - started >= PROGRESS_AFTER else logging.DEBUG,
                   "network MOM (detours) round %d: %d detours (%.1f per sample, K %d, A %d), %d samples violated, %d added; "
                   "QP %d iterations, %.1f s so far", round_, detours.size, detours.size / T, blocks.K, blocks.A,
                    infeasible, added, result.iterations, time.perf_counter() - started)
        if added == 0:
            break
    else:
        raise RuntimeError(f"network MOM (detours): not optimal after {max_rounds} rounds")
    potentials = feasible_potentials(C, S, data, relaxed)
    certificate = network_margin_certificate(Theta, potentials, flows, data, lam, orders)
    logger.log(logging.INFO if time.perf_counter() - started >= PROGRESS_AFTER else logging.DEBUG,
               "network MOM (detours): optimal after %d rounds, %d detours, certified relative gap %.1e",
               round_, detours.size, certificate["relative_gap"])
    return SolverResult((Theta, potentials, flows), objective=certificate["objective"], iterations=round_,
                        status="optimal", path="network_detours", certificate=certificate,
                        extra=dict(detours=detours.size, history=history,
                                   paths=[list(zip(p, e)) for p, e in zip(detours.paths, detours.ends)], working_rows=int((flows > 0).sum()),
                                   pilot=pilot))


def _start(data: NetworkSamples, lam: float, orders, detours: DetourSet, tol: float, max_rounds: int,
           warm: bool) -> dict | None:
    """Fill the first working set: from a pilot fit on every PILOT_FACTOR-th sample (its
    detours, and those its optimum violates on every sample), or on small fits the detours
    violated at INITIAL_COST per arc. Returns what the pilot took (None without one)."""
    from .network_margin import data_subset

    if data.T < PILOT_FACTOR * PILOT_MIN_SAMPLES:
        costs = np.full((data.T, data.n), INITIAL_COST)
        violated_detours(costs, np.zeros_like(costs), data, route_potentials(costs, data, orders), detours, tol)
        return None
    started = time.perf_counter()
    chosen = np.linspace(0, data.T - 1, data.T // PILOT_FACTOR).round().astype(np.int64)
    pilot = solve_network_detours(data_subset(data, chosen), lam, tol=tol, max_rounds=max_rounds, warm=warm)
    for sample, paths in zip(chosen.tolist(), pilot.extra["paths"]):
        for path, (start, end) in paths:
            detours.add(sample, path, start, end)
    C = predicted_costs(pilot.solution[0], data)
    violated_detours(C, np.zeros_like(C), data, route_potentials(C, data, orders), detours, tol, PILOT_BAND)
    return dict(samples=int(chosen.size), rounds=pilot.iterations, seconds=time.perf_counter() - started)
