"""Network MOM's restricted QP (the route equalities and the working rows only): by Clarabel
on its sparse form, or by the block interior-point method on a spanning forest of the
working arcs (`network_margin`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .network_problem import NetworkSamples

#: Clarabel's tolerances on each restricted QP.
QP_TOL = 1e-10


@dataclass
class RestrictedSolution:
    Theta: np.ndarray
    S: np.ndarray            # (T, n) slacks on the working rows (0 elsewhere)
    flows: np.ndarray        # (T, n) multipliers of the working rows times T, in [0, 1]
    iterations: int
    status: str
    seconds: float


def _theta_entries(data: NetworkSamples, t: np.ndarray, a: np.ndarray, basis: sp.csr_matrix | None = None):
    """(entry's position in t/a, column, value) of c_ta = phi_ta' vec(Theta), flat: vec row by
    row, Theta (q, d); with a cycle basis B (`network_cycles`) the coefficients W (m, d) of
    Theta = B W, c_ta = sum_j B_aj W_j' z_t."""
    d = data.d
    if basis is not None:
        starts, stops = basis.indptr[a], basis.indptr[a + 1]
        counts = stops - starts
        which = np.repeat(np.arange(a.size), counts)
        nz = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(starts, counts)
        cycle, sign = basis.indices[nz], basis.data[nz]
        position = np.repeat(which, d)
        cols = (cycle[:, None] * d + np.arange(d)[None, :]).ravel()
        vals = (sign[:, None] * data.Z[t[which]]).ravel()
        return position, cols, vals
    if data.F is None:
        cols = a[:, None] * d + np.arange(d)[None, :]
        vals = data.Z[t]
    else:
        q = data.q
        cols = np.broadcast_to(np.arange(q * d)[None, :], (t.size, q * d))
        vals = (data.F[a][:, :, None] * data.Z[t][:, None, :]).reshape(t.size, q * d)
    return np.repeat(np.arange(t.size), cols.shape[1]), cols.ravel(), vals.ravel()


def solve_restricted(data: NetworkSamples, working: np.ndarray, lam: float, threads: int = 1,
                     basis: sp.spmatrix | None = None, orders: list[np.ndarray] | None = None) -> RestrictedSolution:
    """The MOM QP on the route equalities and the working rows only, by Clarabel; for the
    per-arc model with `basis` (a sparse cycle basis B), on W with Theta = B W. With the
    routes' arc `orders` and the shared model, the route nodes' potentials are substituted
    (`_substituted_rows`): no equality rows and no route potentials."""
    import clarabel

    started = time.perf_counter()
    if orders is not None and data.F is not None and basis is None:
        return _solve_substituted(data, working, lam, threads, orders, started)
    T, n = data.T, data.n
    if basis is not None:
        basis = sp.csr_matrix(basis)
    p = (basis.shape[1] if basis is not None else data.q) * data.d
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
        position, cols, vals = _theta_entries(data, t_, a_, basis)
        k = t_.size
        r = row0 + np.arange(k)
        pieces_r = [r[position]]
        pieces_c = [cols]
        pieces_v = [sign_theta * vals]
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
    if basis is None:
        P = sp.csc_matrix((np.full(p, lam), (np.arange(p), np.arange(p))), shape=(n_vars, n_vars))
    else:  # ||B W||^2 = vec(W)' (B'B kron I_d) vec(W)
        gram = sp.kron(basis.T @ basis, sp.identity(data.d), format="csc") * lam
        P = sp.block_diag([sp.triu(gram, format="csc"), sp.csc_matrix((n_vars - p, n_vars - p))], format="csc")
    q_vec = np.r_[np.zeros(p + n_pot), np.full(R, 1.0 / T)]
    solution, status = _clarabel(P, q_vec, A, b, E, R, p, threads, T)
    x, z = np.asarray(solution.x), np.asarray(solution.z)
    S = np.zeros((T, n))
    S[wt, wa] = np.maximum(x[p + n_pot:], 0.0)
    flows = np.zeros((T, n))
    flows[wt, wa] = np.clip(z[E:E + R] * T, 0.0, 1.0)
    W = x[:p].reshape(-1, data.d)
    return RestrictedSolution(Theta=W if basis is None else basis @ W, S=S, flows=flows,
                              iterations=int(solution.iterations), status=status,
                              seconds=time.perf_counter() - started)


class RestrictedQPNotSolved(RuntimeError):
    """Clarabel stopped on a restricted QP without reaching even its reduced tolerances, at the
    default settings and at the retry's: no fit, and no result to certify."""


#: Clarabel's static regularization on a second attempt. Its default (1e-8 plus a part
#: proportional to the matrix) is added to the KKT diagonal; at lam = 1e-5 on a 40,000-link
#: network's restricted QP (125 samples, 31,357 rows, 14 coefficients, 27,829 potentials) that
#: stopped at InsufficientProgress after 147 iterations; with 1e-10 and no proportional part the
#: same QP was Solved in 110. Only a failed first attempt is retried, so every QP the default
#: solves keeps its solution.
RETRY_STATIC_REGULARIZATION = 1e-10


def _clarabel(P, q_vec, A, b, E: int, R: int, p: int, threads: int, T: int):
    """Clarabel on min x'Px/2 + q'x s.t. the first E rows of Ax + s = b equal, the next 2R >= 0;
    a QP not solved at the default settings is tried once more with a smaller static
    regularization (RETRY_STATIC_REGULARIZATION)."""
    import clarabel

    cones = [clarabel.ZeroConeT(E), clarabel.NonnegativeConeT(2 * R)] if E else [clarabel.NonnegativeConeT(2 * R)]
    statuses = []
    for retry in (False, True):
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = QP_TOL
        settings.tol_ktratio = 1e-8
        settings.max_iter = 500
        settings.max_threads = max(1, int(threads))
        settings.direct_solve_method = "faer" if p > 200 else "qdldl"
        if retry:
            settings.static_regularization_constant = RETRY_STATIC_REGULARIZATION
            settings.static_regularization_proportional = 0.0
        solution = clarabel.DefaultSolver(P, q_vec, A, b, cones, settings).solve()
        statuses.append(f"{solution.status} after {solution.iterations} iterations")
        if "Solved" in str(solution.status):
            return solution, str(solution.status)
    raise RestrictedQPNotSolved(f"network MOM: the restricted QP ({T} samples, {R} working rows) was not solved: "
                                f"{statuses[0]}; with static regularization {RETRY_STATIC_REGULARIZATION:g}: {statuses[1]}")


def _solve_substituted(data: NetworkSamples, working: np.ndarray, lam: float, threads: int,
                       orders: list[np.ndarray], started: float) -> RestrictedSolution:
    """The shared model's restricted QP with the route nodes' potentials substituted: the
    route's equalities fix y_t[v] = (sum of F over the route's arcs from v on)' Theta z_t,
    linear in the same q x d coefficients every row already carries, so a row into or out of a
    route node only changes its coefficients (F_a - G_t[tail] + G_t[head]) z_t' and keeps
    potential columns for its free ends alone. Same optimum as the equality form, with neither
    the equality rows nor the route potentials (most of the variables: a route has tens of
    nodes, a sample a few working rows)."""
    T, n, N, d, q = data.T, data.n, data.n_nodes, data.d, data.q
    p = q * d
    F = data.F
    togo = np.zeros((T, N, q))  # G_t[v]: the route's arc features from route node v to its end
    on_route = np.zeros((T, N), dtype=bool)
    for t, order in enumerate(orders):
        togo[t, data.tails[order]] = np.cumsum(F[order][::-1], axis=0)[::-1]
        on_route[t, data.tails[order]] = True
        on_route[t, data.destinations[t]] = True
    wt, wa = np.nonzero(working)
    R = wt.size
    tails, heads = data.tails[wa], data.heads[wa]
    coefficient = F[wa] - togo[wt, tails] + togo[wt, heads]                     # (R, q)
    theta_vals = (coefficient[:, :, None] * data.Z[wt][:, None, :]).reshape(R, p)  # vec row by row
    touched = np.zeros((T, N), dtype=bool)
    touched[wt, tails] = True
    touched[wt, heads] = True
    free = touched & ~on_route
    rt, ra = np.nonzero(data.routes)
    grounded = _grounded_nodes(data, touched | on_route, rt, ra, wt, wa) & free
    variable = free & ~grounded
    index = np.full((T, N), -1, dtype=np.int64)
    n_pot = int(variable.sum())
    index[variable] = p + np.arange(n_pot)
    rows_r = [np.repeat(np.arange(R), p)]
    rows_c = [np.tile(np.arange(p), R)]
    rows_v = [-theta_vals.ravel()]
    # -(c - y_tail + y_head) - s <= -1, i.e. the margin row in Clarabel's Ax + s = b form.
    for node, sign in ((tails, 1.0), (heads, -1.0)):
        col = index[wt, node]
        ok = col >= 0
        rows_r.append(np.flatnonzero(ok))
        rows_c.append(col[ok])
        rows_v.append(np.full(ok.sum(), sign))
    slack_cols = p + n_pot + np.arange(R)
    rows_r += [np.arange(R), R + np.arange(R)]
    rows_c += [slack_cols, slack_cols]
    rows_v += [-np.ones(R), -np.ones(R)]
    n_vars = p + n_pot + R
    A = sp.csc_matrix((np.concatenate(rows_v), (np.concatenate(rows_r), np.concatenate(rows_c))),
                      shape=(2 * R, n_vars))
    b = np.r_[-np.ones(R), np.zeros(R)]
    P = sp.csc_matrix((np.full(p, lam), (np.arange(p), np.arange(p))), shape=(n_vars, n_vars))
    q_vec = np.r_[np.zeros(p + n_pot), np.full(R, 1.0 / T)]
    solution, status = _clarabel(P, q_vec, A, b, 0, R, p, threads, T)
    x, z = np.asarray(solution.x), np.asarray(solution.z)
    S, flows = np.zeros((T, n)), np.zeros((T, n))
    S[wt, wa] = np.maximum(x[p + n_pot:], 0.0)
    flows[wt, wa] = np.clip(z[:R] * T, 0.0, 1.0)
    return RestrictedSolution(Theta=x[:p].reshape(q, d), S=S, flows=flows, iterations=int(solution.iterations),
                              status=status, seconds=time.perf_counter() - started)


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
