"""MOM from observed routes on a network LP, by a working set over arcs.

The problem (the dual formulation of MOM on a shortest-path LP; no basis, never the costs):

    min_{Theta, y, s >= 0}  (lam/2) ||Theta||_F^2 + (1/T) sum_t sum_{a in rows_t} s_ta
    s.t.  c_ta - y_t[tail a] + y_t[head a]  = 0          on the arcs of route t
          c_ta - y_t[tail a] + y_t[head a] >= 1 - s_ta   on rows_t (usable arcs off route t)

with c_t = F Theta z_t (F = I: the per-arc model, Theta (n, d); F an (n, q) table of arc
attributes: the shared model, Theta (q, d)). The rows are linear in Theta either way.

Why a working set: for a given Theta the potentials of the nodes on route t are fixed by the
route's equalities (y[v] = the route's predicted cost from v to its destination), and the
other constraints are difference constraints y[tail] <= y[head] + w_a. They hold with s = 0
off the working set W exactly when a Bellman-Ford relaxation from the fixed route nodes
(edges head -> tail of length w_a = c_a - 1 + s_a) reaches no route node below its fixed
potential and finds no negative cycle. So: solve the QP restricted to the rows of W (a
relaxation of the whole problem), relax once per sample, add the arcs of every violated
detour (its predecessor chain) and of every negative cycle, and repeat. When nothing is
violated the restricted optimum, extended by the relaxed potentials, is feasible for the
whole problem at the same objective: it is the optimum. Only the rows that carry dual flow at
the optimum need to be in W, a small share of the arcs on road networks.

The restricted QP is solved by Clarabel on its sparse form. The optimum is certified
independently of it (`network_margin_certificate`): the extended potentials give the primal
objective, the restricted QP's multipliers (flows on the working arcs, completed along the
route by conservation) give a Lagrange-dual lower bound.

Ground floor: imports nothing from the project but `solvers.result` (numpy, scipy, clarabel).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from . import policy
from .result import SolverResult

logger = logging.getLogger(__name__)

#: Clarabel's tolerances on each restricted QP.
QP_TOL = 1e-10
#: Rows within this of their margin (1 + BAND) count as violated when the working set grows:
#: arcs just outside the margin at one round's Theta tend to reach it at the next.
BAND = 1e-2
#: A constraint counts as violated when it is off by more than this, relative to the costs' scale.
VIOLATION_TOL = 1e-9
#: The certificate's default bound on the relative duality gap.
GAP_TOL = 1e-6
MAX_ROUNDS = 50
#: A working row whose flow (multiplier times T, in [0, 1]) and slack are below this leaves the
#: working set after its round (`solve_network_margin(shrink=True)`): an interior-point optimum
#: leaves round-off on both.
SHRINK_FLOW = 1e-6


@dataclass(frozen=True)
class NetworkSamples:
    """Observed routes on one network: arc tails/heads (0-based), routes (T, n) bool, the rows
    (T, n) bool (usable arcs off the route, each with a margin constraint), features Z (T, d),
    arc features F (n, q) or None (per-arc model), and each route's destination (T,)."""

    tails: np.ndarray
    heads: np.ndarray
    n_nodes: int
    routes: np.ndarray
    rows: np.ndarray
    Z: np.ndarray
    F: np.ndarray | None
    destinations: np.ndarray

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
    return NetworkSamples(tails, heads, int(n_nodes), routes, usable & ~routes, Z, F, destinations)


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


# ---------------------------------------------------------------------------------------------
# Route potentials and the relaxation that finds violated rows


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


@dataclass
class Relaxation:
    """What one Bellman-Ford relaxation found: potentials (T, nodes) satisfying every row that
    is not reported violated, the arcs to add (T, n) bool, and which samples are feasible."""

    potentials: np.ndarray
    add: np.ndarray
    feasible: np.ndarray
    sweeps: int


def relax(C: np.ndarray, S: np.ndarray, data: NetworkSamples, fixed: np.ndarray, working: np.ndarray,
          band: float, tol: float) -> Relaxation:
    """Bellman-Ford from the route nodes (their potentials `fixed`, NaN off the routes) over the
    rows: edge head -> tail of length c_a - 1 + s_a (minus `band` off the working set).

    A row whose tail is a route node and which would lower that node's fixed potential is a
    violated detour: it and the arcs of its head's predecessor chain are added. A sample still
    relaxing after as many sweeps as it has free nodes has a negative cycle among its free
    nodes: the arcs of the predecessor cycle are added.
    """
    T, n = C.shape
    lengths = np.where(data.rows, C - 1.0 + S - np.where(working, 0.0, band), np.inf)
    on_route = ~np.isnan(fixed)
    x = np.where(on_route, fixed, np.inf)
    pred = np.full((T, data.n_nodes), -1, dtype=np.int64)
    order = np.argsort(data.tails, kind="stable")
    targets, starts = np.unique(data.tails[order], return_index=True)
    heads_sorted = data.heads[order]
    scale = 1.0 + np.nanmax(np.abs(fixed), initial=0.0)
    eps = tol * scale
    active = np.ones(T, dtype=bool)
    max_sweeps = data.n_nodes + 1
    sweeps = 0
    while active.any() and sweeps < max_sweeps:
        sweeps += 1
        idx = np.flatnonzero(active)
        cand = x[idx][:, heads_sorted] + lengths[idx][:, order]          # (k, n) by tail order
        best_pos = _argmin_reduceat(cand, starts)                            # (k, targets) positions in order
        best = np.take_along_axis(cand, best_pos, axis=1)
        current = x[idx][:, targets]
        free = ~on_route[idx][:, targets]
        improve = free & (best < current - eps * np.maximum(1.0, np.abs(np.where(np.isfinite(current), current, 0))))
        if not improve.any():
            active[idx] = False
            break
        k_rows, k_cols = np.nonzero(improve)
        x[idx[k_rows], targets[k_cols]] = best[k_rows, k_cols]
        pred[idx[k_rows], targets[k_cols]] = order[best_pos[k_rows, k_cols]]
        changed = np.zeros(idx.size, dtype=bool)
        changed[k_rows] = True
        active[idx[~changed]] = False
    cycling = active.copy()
    # Violated detours: rows into a route node that would lower its fixed potential.
    add = np.zeros((T, n), dtype=bool)
    reach = x[:, data.heads] + lengths                                      # (T, n)
    tail_fixed = on_route[:, data.tails]
    tail_value = np.where(tail_fixed, x[:, data.tails], np.inf)
    violated = tail_fixed & np.isfinite(reach) & (reach < tail_value - eps * np.maximum(1.0, np.abs(np.where(
        np.isfinite(tail_value), tail_value, 0.0))))
    add |= violated
    vt, va = np.nonzero(violated)
    _add_chains(add, pred, data.heads[va], vt, data)
    for t in np.flatnonzero(cycling):
        _add_cycle(add, pred[t], t, data)
    add &= ~working & data.rows
    feasible = ~(violated.any(axis=1) | cycling)
    return Relaxation(potentials=x, add=add, feasible=feasible, sweeps=sweeps)


def _argmin_reduceat(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per row, the position (into the columns) of the smallest value of each segment
    [starts[i], starts[i+1]); ties to the first."""
    k, n = values.shape
    mins = np.minimum.reduceat(values, starts, axis=1)
    segment = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, n]))
    hit = values == mins[:, segment]
    position = np.where(hit, np.arange(n)[None, :], n)
    return np.minimum.reduceat(position, starts, axis=1).clip(max=n - 1)


def _add_chains(add: np.ndarray, pred: np.ndarray, nodes: np.ndarray, samples: np.ndarray,
                data: NetworkSamples) -> None:
    """Mark the predecessor chains of (sample, node) pairs (arcs head -> ... back to a route node)."""
    nodes, samples = nodes.copy(), samples.copy()
    for _ in range(data.n_nodes):
        arcs = pred[samples, nodes]
        keep = arcs >= 0
        if not keep.any():
            return
        samples, arcs = samples[keep], arcs[keep]
        fresh = ~add[samples, arcs]
        add[samples, arcs] = True
        samples, nodes = samples[fresh], data.heads[arcs[fresh]]


def _add_cycle(add: np.ndarray, pred_t: np.ndarray, t: int, data: NetworkSamples) -> None:
    """Mark the arcs of a cycle of sample t's predecessor graph (after a sweep limit)."""
    start = int(np.flatnonzero(pred_t >= 0)[0]) if (pred_t >= 0).any() else -1
    if start < 0:
        return
    node = start
    for _ in range(data.n_nodes):  # walk into the cycle
        arc = pred_t[node]
        if arc < 0:
            break
        node = data.heads[arc]
    seen = set()
    while pred_t[node] >= 0 and node not in seen:
        seen.add(node)
        arc = pred_t[node]
        add[t, arc] = True
        node = data.heads[arc]
    if not seen:  # no cycle through the first node: mark every predecessor arc of the sample
        add[t, pred_t[pred_t >= 0]] = True


def feasible_potentials(C: np.ndarray, S: np.ndarray, data: NetworkSamples, fixed: np.ndarray,
                        relaxed: np.ndarray) -> np.ndarray:
    """Potentials on every node from a feasible relaxation: route nodes fixed, relaxed free nodes
    as relaxed, nodes it never reached placed high enough above the rest that rows into them
    hold, then relaxed among themselves (a negative cycle among them would have been found)."""
    y = relaxed.copy()
    unreached = ~np.isfinite(y)
    if not unreached.any():
        return y
    lengths = np.where(data.rows, C - 1.0 + S, np.inf)
    span = np.abs(np.where(np.isfinite(lengths), lengths, 0.0)).sum(axis=1)
    top = np.nanmax(np.where(np.isfinite(y), y, np.nan), axis=1, initial=0.0)
    y = np.where(unreached, (np.nan_to_num(top) + span + 1.0)[:, None], y)
    for _ in range(data.n_nodes):
        reach = y[:, data.heads] + lengths
        t_rows, a_cols = np.nonzero(unreached[:, data.tails] & (reach < y[:, data.tails]))
        if not t_rows.size:
            break
        np.minimum.at(y, (t_rows, data.tails[a_cols]), reach[t_rows, a_cols])
    return y


# ---------------------------------------------------------------------------------------------
# The restricted QP


@dataclass
class RestrictedSolution:
    Theta: np.ndarray
    S: np.ndarray            # (T, n) slacks on the working rows (0 elsewhere)
    flows: np.ndarray        # (T, n) multipliers of the working rows times T, in [0, 1]
    iterations: int
    status: str
    seconds: float


def _theta_entries(data: NetworkSamples, t: np.ndarray, a: np.ndarray):
    """Column indices and values of c_ta = phi_ta' vec(Theta) (vec row by row, Theta (q, d))."""
    d = data.d
    if data.F is None:
        cols = a[:, None] * d + np.arange(d)[None, :]
        vals = data.Z[t]
    else:
        q = data.q
        cols = np.broadcast_to(np.arange(q * d)[None, :], (t.size, q * d))
        vals = (data.F[a][:, :, None] * data.Z[t][:, None, :]).reshape(t.size, q * d)
    return cols, vals


def solve_restricted(data: NetworkSamples, working: np.ndarray, lam: float, threads: int = 1) -> RestrictedSolution:
    """The MOM QP on the route equalities and the working rows only, by Clarabel."""
    import clarabel

    started = time.perf_counter()
    T, n, p = data.T, data.n, data.q * data.d
    rt, ra = np.nonzero(data.routes)
    wt, wa = np.nonzero(working)
    # Potentials of the nodes the route and working arcs touch; each route's destination and
    # one node of every component that does not reach the route are fixed at 0 (the problem
    # is invariant to shifting a component's potentials).
    touched = np.zeros((T, data.n_nodes), dtype=bool)
    for t_, a_ in ((rt, ra), (wt, wa)):
        touched[t_, data.tails[a_]] = True
        touched[t_, data.heads[a_]] = True
    grounded = _grounded_nodes(data, touched, rt, ra, wt, wa)
    variable = touched & ~grounded
    index = np.full((T, data.n_nodes), -1, dtype=np.int64)
    n_pot = int(variable.sum())
    index[variable] = p + np.arange(n_pot)
    R = wt.size
    n_vars = p + n_pot + R
    E = rt.size

    def row_block(t_, a_, sign_theta, sign_pot, row0):
        cols, vals = _theta_entries(data, t_, a_)
        k = t_.size
        r = row0 + np.arange(k)
        pieces_r = [np.repeat(r, cols.shape[1])]
        pieces_c = [cols.ravel()]
        pieces_v = [sign_theta * vals.ravel()]
        for node_of, s in ((data.tails, -1.0), (data.heads, 1.0)):
            col = index[t_, node_of[a_]]
            ok = col >= 0
            pieces_r.append(r[ok])
            pieces_c.append(col[ok])
            pieces_v.append(np.full(ok.sum(), sign_pot * s))
        return pieces_r, pieces_c, pieces_v

    rows_r, rows_c, rows_v = [], [], []
    for block in (row_block(rt, ra, 1.0, 1.0, 0), row_block(wt, wa, -1.0, -1.0, E)):
        rows_r += block[0]
        rows_c += block[1]
        rows_v += block[2]
    slack_cols = p + n_pot + np.arange(R)
    rows_r += [E + np.arange(R), E + R + np.arange(R)]
    rows_c += [slack_cols, slack_cols]
    rows_v += [-np.ones(R), -np.ones(R)]
    A = sp.csc_matrix((np.concatenate(rows_v), (np.concatenate(rows_r), np.concatenate(rows_c))),
                      shape=(E + 2 * R, n_vars))
    b = np.r_[np.zeros(E), -np.ones(R), np.zeros(R)]
    P = sp.csc_matrix((np.full(p, lam), (np.arange(p), np.arange(p))), shape=(n_vars, n_vars))
    q_vec = np.r_[np.zeros(p + n_pot), np.full(R, 1.0 / T)]
    cones = [clarabel.ZeroConeT(E), clarabel.NonnegativeConeT(2 * R)] if E else [clarabel.NonnegativeConeT(2 * R)]
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = QP_TOL
    settings.tol_ktratio = 1e-8
    settings.max_iter = 500
    settings.max_threads = max(1, int(threads))
    settings.direct_solve_method = "faer" if p > 200 else "qdldl"
    solution = clarabel.DefaultSolver(P, q_vec, A, b, cones, settings).solve()
    status = str(solution.status)
    if "Solved" not in status:
        raise RuntimeError(f"network MOM: the restricted QP ({T} samples, {R} working rows) was not solved: {status}")
    x, z = np.asarray(solution.x), np.asarray(solution.z)
    S = np.zeros((T, n))
    S[wt, wa] = np.maximum(x[p + n_pot:], 0.0)
    flows = np.zeros((T, n))
    flows[wt, wa] = np.clip(z[E:E + R] * T, 0.0, 1.0)
    return RestrictedSolution(Theta=x[:p].reshape(data.q, data.d), S=S, flows=flows,
                              iterations=int(solution.iterations), status=status,
                              seconds=time.perf_counter() - started)


def _grounded_nodes(data: NetworkSamples, touched, rt, ra, wt, wa) -> np.ndarray:
    """(T, nodes) bool: each route's destination, and the first node of every component of the
    route and working arcs (per sample) that does not contain the route."""
    T, N = data.T, data.n_nodes
    ends = [(t_ * N + data.tails[a_], t_ * N + data.heads[a_]) for t_, a_ in ((rt, ra), (wt, wa))]
    u = np.concatenate([e[0] for e in ends])
    v = np.concatenate([e[1] for e in ends])
    graph = sp.csr_matrix((np.ones(u.size), (u, v)), shape=(T * N, T * N))
    _, label = sp.csgraph.connected_components(graph, directed=False)
    grounded = np.zeros(T * N, dtype=bool)
    grounded[np.arange(T) * N + data.destinations] = True
    flat_touched = touched.ravel()
    route_labels = np.zeros(label.max() + 1, dtype=bool)
    route_labels[label[np.arange(T) * N + data.destinations]] = True
    candidates = np.flatnonzero(flat_touched & ~route_labels[label])
    if candidates.size:
        _, first = np.unique(label[candidates], return_index=True)
        grounded[candidates[first]] = True
    return grounded.reshape(T, N)


# ---------------------------------------------------------------------------------------------
# The restricted QP as a block hinge QP (solvers.block_hinge_ipm)


@dataclass
class TreeBlocks:
    """The restricted QP in the block method's form. Per sample, the free potentials are
    replaced by the reduced costs of a spanning forest of the working arcs rooted at the route
    (or at one grounded node of a component that does not reach it): those are the local values
    u_t with their own hinge; every other working row is coupled, m_tk'(Theta z_t) + n_tk'u_t,
    with m_tk in the arc features' space (F' times the arc's reduced-cost operator)."""

    M: np.ndarray                 # (T, K, q) coupled rows on Theta z_t
    N: np.ndarray                 # (T, K, Q) coupled rows on the local values
    coupled_arcs: np.ndarray      # (T, K) arc of each coupled row, -1 for padding
    local_arcs: np.ndarray        # (T, Q) tree arc of each local value, -1 for padding
    walks: list                   # per sample: (node, parent, arc, slot, node_is_tail) in tree order


def tree_blocks(data: NetworkSamples, working: np.ndarray, orders: list[np.ndarray], F: np.ndarray) -> TreeBlocks:
    """`TreeBlocks` of the working set (F: (n, q), the arc features the costs are built on)."""
    T, q = data.T, F.shape[1]
    per_sample = []
    for t in range(T):
        order = orders[t]
        g = {}  # node -> coefficient of Theta z_t in its potential (q,)
        to_go = np.cumsum(F[order][::-1], axis=0)[::-1]
        for k, arc in enumerate(order):
            g[int(data.tails[arc])] = to_go[k]
        g[int(data.destinations[t])] = np.zeros(q)
        route_nodes = set(g)
        arcs = np.flatnonzero(working[t])
        adjacency: dict[int, list[int]] = {}
        for arc in arcs:
            adjacency.setdefault(int(data.tails[arc]), []).append(int(arc))
            adjacency.setdefault(int(data.heads[arc]), []).append(int(arc))
        h = {v: {} for v in route_nodes}  # node -> {slot: coefficient} of the local values
        walk, tree = [], set()
        frontier = sorted(v for v in route_nodes if v in adjacency)
        pending = sorted(v for v in adjacency if v not in route_nodes)
        while True:
            while frontier:
                nxt = []
                for parent in frontier:
                    for arc in adjacency.get(parent, ()):
                        tail, head = int(data.tails[arc]), int(data.heads[arc])
                        child = head if tail == parent else tail
                        if child in g:
                            continue
                        slot = len(walk)
                        is_tail = child == tail
                        # r_arc = c_arc - y_tail + y_head = u_slot gives the child's potential.
                        g[child] = g[parent] + F[arc] if is_tail else g[parent] - F[arc]
                        h[child] = dict(h[parent])
                        h[child][slot] = h[child].get(slot, 0.0) + (-1.0 if is_tail else 1.0)
                        walk.append((child, parent, arc, slot, is_tail))
                        tree.add(arc)
                        nxt.append(child)
                frontier = nxt
            pending = [v for v in pending if v not in g]
            if not pending:
                break
            root = pending[0]  # a component that does not reach the route: grounded at 0
            g[root], h[root] = np.zeros(q), {}
            walk.append((root, -1, -1, -1, False))
            frontier = [root]
        coupled = [int(a) for a in arcs if int(a) not in tree]
        rows_m = [F[a] - g[int(data.tails[a])] + g[int(data.heads[a])] for a in coupled]
        rows_n = []
        for a in coupled:
            entry = {}
            for node, sign in ((int(data.tails[a]), -1.0), (int(data.heads[a]), 1.0)):
                for slot, value in h[node].items():
                    entry[slot] = entry.get(slot, 0.0) + sign * value
            rows_n.append(entry)
        locals_ = [(slot, arc) for (_, _, arc, slot, _) in walk if arc >= 0]
        per_sample.append((coupled, rows_m, rows_n, locals_, walk))
    K = max(1, max(len(s[0]) for s in per_sample))
    Q = max(1, max(len(s[3]) for s in per_sample))
    M, N = np.zeros((T, K, q)), np.zeros((T, K, Q))
    coupled_arcs, local_arcs = np.full((T, K), -1), np.full((T, Q), -1)
    walks = []
    for t, (coupled, rows_m, rows_n, locals_, walk) in enumerate(per_sample):
        # Local values are numbered in walk order; walk slots skip grounded roots.
        renumber = {slot: i for i, (slot, _) in enumerate(locals_)}
        for k, (arc, m_row, n_row) in enumerate(zip(coupled, rows_m, rows_n)):
            M[t, k] = m_row
            coupled_arcs[t, k] = arc
            for slot, value in n_row.items():
                N[t, k, renumber[slot]] = value
        for slot, arc in locals_:
            local_arcs[t, renumber[slot]] = arc
        walks.append([(node, parent, arc, renumber.get(slot, -1), is_tail) for node, parent, arc, slot, is_tail in walk])
    return TreeBlocks(M, N, coupled_arcs, local_arcs, walks)


def solve_restricted_blocks(data: NetworkSamples, working: np.ndarray, lam: float, orders: list[np.ndarray],
                            F: np.ndarray, threads: int = 1) -> RestrictedSolution:
    """The restricted QP by the block interior-point method on `tree_blocks`; Theta on F's
    space (q, d), slacks and flows on the working rows as `solve_restricted`."""
    from .block_hinge_ipm import block_hinge_qp

    started = time.perf_counter()
    blocks = tree_blocks(data, working, orders, F)
    T, n = data.T, data.n
    try:
        result = block_hinge_qp(blocks.M, blocks.N, data.Z, lam, 1.0 / T, threads=threads)
    except RuntimeError:
        # A stalled solve is solved again with every Newton solve refined to round-off.
        result = block_hinge_qp(blocks.M, blocks.N, data.Z, lam, 1.0 / T, threads=threads, accurate=True)
    (W, U), alpha = result.solution, result.extra["multipliers"]
    flows, S = np.zeros((T, n)), np.zeros((T, n))
    margins = np.concatenate([(blocks.M @ (data.Z @ W.T)[:, :, None])[..., 0] + (blocks.N @ U[:, :, None])[..., 0], U],
                             axis=1)
    arcs = np.concatenate([blocks.coupled_arcs, blocks.local_arcs], axis=1)
    t_index, k_index = np.nonzero(arcs >= 0)
    flows[t_index, arcs[t_index, k_index]] = np.clip(alpha[t_index, k_index] * T, 0.0, 1.0)
    S[t_index, arcs[t_index, k_index]] = np.maximum(0.0, 1.0 - margins[t_index, k_index])
    return RestrictedSolution(Theta=W, S=S, flows=flows, iterations=result.iterations, status=result.status,
                              seconds=time.perf_counter() - started)


# ---------------------------------------------------------------------------------------------
# Certificate and the working-set loop


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


def initial_working_set(data: NetworkSamples) -> np.ndarray:
    """The rows that leave or enter their route: where every detour starts and ends."""
    on_route = np.zeros((data.T, data.n_nodes), dtype=bool)
    t_index, arcs = np.nonzero(data.routes)
    on_route[t_index, data.tails[arcs]] = True
    on_route[t_index, data.heads[arcs]] = True
    return data.rows & (on_route[:, data.tails] | on_route[:, data.heads])


RESTRICTED_METHODS = ("auto", "blocks", "clarabel")


def cost_basis(data: NetworkSamples) -> tuple[np.ndarray, bool]:
    """(the arc features the restricted QP works on, whether they are the per-arc model's
    cycle space). Per-arc model: an orthonormal basis U of the incidence matrix's null space
    (reduced costs do not see c + A'y, and the regularizer is smallest with no part of Theta
    outside U: Theta = U W, n - rank(A) of n arcs); shared model: its arc features."""
    if data.F is not None:
        return data.F, False
    import scipy.linalg

    A = incidence_matrix(data.tails, data.heads, data.n_nodes).toarray()
    return scipy.linalg.null_space(A), True


def solve_network_margin(data: NetworkSamples, lam: float, band: float = BAND, tol: float = VIOLATION_TOL,
                         max_rounds: int = MAX_ROUNDS, working: np.ndarray | None = None,
                         threads: int = 1, method: str = "auto", shrink: bool = True) -> SolverResult:
    """The exact MOM optimum on a network LP by the working set over arcs (module docstring).

    method: how each restricted QP is solved: "blocks" (the block interior-point method on
    `tree_blocks`, in the cost basis of `cost_basis`), "clarabel" (its sparse form) or "auto"
    (`policy.network_restricted_method` by the number of coefficients).

    Returns a `SolverResult`: solution (Theta, potentials (T, nodes), row flows (T, n)), the
    objective, iterations = working-set rounds, the certificate
    (`network_margin_certificate`), extra: working_rows, history (one dict per round)."""
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be a positive finite number; got {lam}")
    if method not in RESTRICTED_METHODS:
        raise ValueError(f"method must be one of {RESTRICTED_METHODS}; got {method!r}")
    if method == "auto":
        method = policy.network_restricted_method(data.q * data.d)
    orders = route_order(data)
    working = initial_working_set(data) if working is None else (np.asarray(working, dtype=bool) & data.rows)
    basis, cycle_space = cost_basis(data) if method == "blocks" else (None, False)
    history = []
    dropped = np.zeros_like(working)
    for round_ in range(1, max_rounds + 1):
        restricted = None
        if method == "blocks":
            try:
                restricted = solve_restricted_blocks(data, working, lam, orders, basis, threads)
                if cycle_space:
                    restricted.Theta = basis @ restricted.Theta
            except RuntimeError as error:  # the block method stalled twice: Clarabel solves this round
                logger.info("network MOM round %d: %s; the round goes to Clarabel", round_, error)
        if restricted is None:
            restricted = solve_restricted(data, working, lam, threads)
        C = predicted_costs(restricted.Theta, data)
        fixed = route_potentials(C, data, orders)
        relaxation = relax(C, restricted.S, data, fixed, working, band, tol)
        added = int(relaxation.add.sum())
        history.append(dict(round=round_, working_rows=int(working.sum()), added=added,
                            infeasible_samples=int((~relaxation.feasible).sum()), qp_seconds=restricted.seconds,
                            qp_iterations=restricted.iterations, sweeps=relaxation.sweeps))
        logger.info("network MOM round %d: %d working rows (%.1f per sample), %d samples with violated rows, "
                    "%d rows added; QP %.1f s, %d iterations", round_, working.sum(), working.sum() / data.T,
                    (~relaxation.feasible).sum(), added, restricted.seconds, restricted.iterations)
        if relaxation.feasible.all() and added == 0:
            break
        if added == 0:
            raise RuntimeError("network MOM: violated rows were found but none could be added "
                               f"(samples {np.flatnonzero(~relaxation.feasible)[:5].tolist()})")
        if shrink:
            # Rows without flow and without slack do not bind the restricted optimum: dropping
            # them leaves it optimal. A row is dropped at most once (one that comes back stays),
            # so the rounds cannot cycle.
            idle = working & (restricted.flows <= SHRINK_FLOW) & (restricted.S <= SHRINK_FLOW) & ~dropped
            working, dropped = working & ~idle, dropped | idle
        working = working | relaxation.add
    else:
        raise RuntimeError(f"network MOM: not optimal after {max_rounds} working-set rounds")
    potentials = feasible_potentials(C, restricted.S, data, fixed, relaxation.potentials)
    certificate = network_margin_certificate(restricted.Theta, potentials, restricted.flows, data, lam, orders)
    return SolverResult((restricted.Theta, potentials, restricted.flows), objective=certificate["objective"],
                        iterations=round_, status="optimal", path=f"network_working_set_{method}",
                        certificate=certificate, extra=dict(working_rows=int(working.sum()), history=history))


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
