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
