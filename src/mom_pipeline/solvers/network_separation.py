"""Network MOM's separation step: one Bellman-Ford relaxation per round, batched over the
samples, from the route nodes' fixed potentials over the margin rows (`network_margin`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .network_problem import NetworkSamples

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
    # A comparison counts a change only beyond tol relative to the value compared (at least 1,
    # the margin's scale): round-off in a route's cost-to-go grows with its size, a violation
    # that matters does not.
    eps = tol
    sweeps, cycling, cycle_node = _frontier_sweeps(x, pred, lengths, on_route, data, eps, data.n_nodes + 1)
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
        _add_cycle(add, pred[t], t, data, int(cycle_node[t]))
    add &= ~working & data.rows
    feasible = ~(violated.any(axis=1) | cycling)
    return Relaxation(potentials=x, add=add, feasible=feasible, sweeps=sweeps)


#: Samples still relaxing are checked for a cycle of their predecessor arcs every this many
#: sweeps: such a cycle is a negative cycle (Bellman-Ford's predecessor graph has no other
#: cycles), so the sample stops there instead of relaxing it for as many sweeps as it has nodes.
CYCLE_CHECK_SWEEPS = 8


def _frontier_sweeps(x: np.ndarray, pred: np.ndarray, lengths: np.ndarray, on_route: np.ndarray,
                     data: NetworkSamples, eps: float, max_sweeps: int) -> tuple[int, np.ndarray, np.ndarray]:
    """Bellman-Ford sweeps, in place on x (T, nodes) and pred, that relax only the arcs whose
    head changed in the sweep before (all samples at once): a sweep costs the in-arcs of the
    nodes that moved, not every arc of every sample. Returns (sweeps, (T,) bool: the sample has
    a negative cycle among its free nodes, (T,) a node on that cycle or -1)."""
    T, N = x.shape
    by_head = np.argsort(data.heads, kind="stable")
    in_count = np.bincount(data.heads, minlength=N)
    in_start = np.r_[0, np.cumsum(in_count)[:-1]]
    changed = np.flatnonzero(np.isfinite(x))  # flat (sample, node) keys of the nodes that moved
    cycle_node = np.full(T, -1, dtype=np.int64)
    x_flat, pred_flat = x.reshape(-1), pred.reshape(-1)
    sweeps = 0
    while changed.size and sweeps < max_sweeps:
        sweeps += 1
        samples, nodes = np.divmod(changed, N)
        counts = in_count[nodes]
        total = int(counts.sum())
        offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        arcs = by_head[np.repeat(in_start[nodes], counts) + offsets]
        samples = np.repeat(samples, counts)
        tails = data.tails[arcs]
        candidate = x_flat[np.repeat(changed, counts)] + lengths[samples, arcs]
        key = samples * N + tails
        current = x_flat[key]
        better = ~on_route.reshape(-1)[key] & (candidate < current - eps * np.maximum(
            1.0, np.abs(np.where(np.isfinite(current), current, 0.0))))
        arcs, candidate, key = arcs[better], candidate[better], key[better]
        # The smallest candidate per (sample, node), the first arc among ties.
        ranked = np.lexsort((arcs, candidate, key))
        first = ranked[np.r_[True, key[ranked][1:] != key[ranked][:-1]]] if ranked.size else ranked
        changed = key[first]
        x_flat[changed] = candidate[first]
        pred_flat[changed] = arcs[first]
        if sweeps % CYCLE_CHECK_SWEEPS == 0 and changed.size:
            busy = np.unique(changed // N)
            found = _cycle_nodes(pred[busy], data.heads)
            stop = busy[found >= 0]
            if stop.size:
                cycle_node[stop] = found[found >= 0]
                changed = changed[~np.isin(changed // N, stop)]
    cycling = cycle_node >= 0
    if changed.size:  # still relaxing after max_sweeps: a negative cycle the check has not met
        cycling[np.unique(changed // N)] = True
    return sweeps, cycling, cycle_node


def _cycle_nodes(pred: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """Per row of predecessor arcs (k, nodes), a node on a cycle of the graph node -> head of its
    predecessor arc, or -1 when it has none (pointer doubling: 2^j >= nodes steps from every node
    end on a cycle or at a node without predecessor)."""
    k, N = pred.shape
    successor = np.where(pred >= 0, heads[np.maximum(pred, 0)], np.arange(N)[None, :])
    rows = np.arange(k)[:, None]
    for _ in range(int(np.ceil(np.log2(N + 1))) + 1):
        successor = successor[rows, successor]
    on_cycle = pred[rows, successor] >= 0
    return np.where(on_cycle.any(axis=1), successor[np.arange(k), np.argmax(on_cycle, axis=1)], -1)


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


def _add_cycle(add: np.ndarray, pred_t: np.ndarray, t: int, data: NetworkSamples, start: int = -1) -> None:
    """Mark the arcs of a cycle of sample t's predecessor graph, walking from `start` (a node
    on it, or -1: the first node with a predecessor)."""
    if start < 0:
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


def feasible_potentials(C: np.ndarray, S: np.ndarray, data: NetworkSamples, relaxed: np.ndarray) -> np.ndarray:
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
