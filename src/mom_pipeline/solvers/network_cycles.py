"""A sparse basis of a network's cycle space, the space the per-arc model's costs live in.

Reduced costs on a network LP do not see a cost vector's potential part (c and c + A'y have
the same reduced costs for every basis), so MOM's minimum-norm Theta has every column in the
null space of the incidence matrix A: Theta = B W with B (arcs, m) a basis of that space,
m = arcs - nodes + components. Solving for W instead of Theta shrinks the coefficient block
from n d to m d (760 to 361 arcs' worth on the 20 x 20 grid, 914 to 499 on Anaheim), and the
dense block an interior-point factorization pays for shrinks with its cube.

The basis is kept sparse (short cycles: a road network's two-way links give 2-cycles, a grid
its faces) so each arc's cost stays a combination of a few coefficients: greedy shortest
cycles through each arc, kept when independent over GF(2) (independence there implies
independence over the reals), completed by the fundamental cycles of a spanning forest.

Ground floor: numpy and scipy only.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import scipy.sparse as sp

__all__ = ["cycle_space_dimension", "short_cycle_basis"]


def cycle_space_dimension(tails: np.ndarray, heads: np.ndarray, n_nodes: int) -> int:
    """arcs - nodes + connected components (of the nodes that arcs touch, isolated ones count too)."""
    n = len(tails)
    graph = sp.csr_matrix((np.ones(n), (tails, heads)), shape=(n_nodes, n_nodes))
    components, _ = sp.csgraph.connected_components(graph, directed=False)
    return n - n_nodes + components


def _shortest_cycle_through(arc: int, tails, heads, incident) -> list[tuple[int, int]] | None:
    """The shortest undirected cycle through `arc` as (arc, +1 forward / -1 backward) pairs,
    found by a breadth-first search from the arc's head back to its tail without the arcs that
    join the same two nodes (those give 2-cycles, `_two_cycles`)."""
    start, goal = int(heads[arc]), int(tails[arc])
    ends = {start, goal}
    parent = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            break
        for other in incident[node]:
            nxt = int(heads[other]) if tails[other] == node else int(tails[other])
            if other == arc or {node, nxt} == ends:
                continue
            if nxt not in parent:
                parent[nxt] = (other, node)
                queue.append(nxt)
    if goal not in parent:
        return None
    cycle = [(arc, 1)]
    node = goal
    while parent[node] is not None:
        other, prev = parent[node]
        # Walking prev -> node along `other`: forward when other runs prev -> node.
        cycle.append((other, 1 if tails[other] == prev else -1))
        node = prev
    return cycle


def short_cycle_basis(tails, heads, n_nodes: int) -> sp.csc_matrix:
    """A basis B (arcs, m) of the incidence matrix's null space with entries in {-1, 0, 1}:
    each column a cycle (arcs along it +1, against it -1), short cycles first."""
    tails, heads = np.asarray(tails, dtype=np.int64), np.asarray(heads, dtype=np.int64)
    n = tails.size
    m = cycle_space_dimension(tails, heads, n_nodes)
    incident: list[list[int]] = [[] for _ in range(n_nodes)]
    for arc in range(n):
        incident[int(tails[arc])].append(arc)
        if heads[arc] != tails[arc]:
            incident[int(heads[arc])].append(arc)
    candidates = _two_cycles(tails, heads)
    for arc in range(n):
        cycle = _shortest_cycle_through(arc, tails, heads, incident)
        if cycle is not None:
            candidates.append(cycle)
    candidates.sort(key=len)
    chosen: list[list[tuple[int, int]]] = []
    pivots: dict[int, int] = {}  # leading bit -> reduced bit set (GF(2) row echelon form)

    def independent(cycle) -> bool:
        bits = 0
        for arc, _ in cycle:
            bits ^= 1 << arc
        while bits:
            top = bits.bit_length() - 1
            if top not in pivots:
                pivots[top] = bits
                return True
            bits ^= pivots[top]
        return False

    for cycle in candidates:
        if len(chosen) == m:
            break
        if independent(cycle):
            chosen.append(cycle)
    if len(chosen) < m:
        chosen += [c for c in _fundamental_cycles(tails, heads, incident, n_nodes) if independent(c)]
    if len(chosen) != m:
        raise RuntimeError(f"cycle basis: found {len(chosen)} independent cycles, expected {m}")
    rows = np.concatenate([[a for a, _ in c] for c in chosen]) if chosen else np.zeros(0, dtype=np.int64)
    signs = np.concatenate([[s for _, s in c] for c in chosen]) if chosen else np.zeros(0)
    cols = np.repeat(np.arange(m), [len(c) for c in chosen])
    return sp.csc_matrix((signs.astype(float), (rows, cols)), shape=(n, m))


def _two_cycles(tails, heads) -> list[list[tuple[int, int]]]:
    """Each arc with the first arc that joins the same two nodes (a two-way road, a parallel
    arc), and each self-loop alone."""
    first: dict[tuple[int, int], int] = {}
    cycles = []
    for arc, (tail, head) in enumerate(zip(tails.tolist(), heads.tolist())):
        if tail == head:
            cycles.append([(arc, 1)])
            continue
        key = (min(tail, head), max(tail, head))
        if key not in first:
            first[key] = arc
            continue
        other = first[key]
        # Around the cycle: this arc forward, then back along `other` (forward when it runs head -> tail).
        cycles.append([(arc, 1), (other, 1 if tails[other] == head else -1)])
    return cycles


def _fundamental_cycles(tails, heads, incident, n_nodes: int) -> list[list[tuple[int, int]]]:
    """The cycle of every non-tree arc of a breadth-first spanning forest with its tree path."""
    parent_arc = np.full(n_nodes, -1, dtype=np.int64)
    depth = np.full(n_nodes, -1, dtype=np.int64)
    in_tree = np.zeros(tails.size, dtype=bool)
    for root in range(n_nodes):
        if depth[root] >= 0:
            continue
        depth[root] = 0
        queue = deque([root])
        while queue:
            node = queue.popleft()
            for arc in incident[node]:
                nxt = int(heads[arc]) if tails[arc] == node else int(tails[arc])
                if depth[nxt] < 0:
                    depth[nxt], parent_arc[nxt], in_tree[arc] = depth[node] + 1, arc, True
                    queue.append(nxt)

    def up(node):  # the arc from node towards the root, walked node -> parent
        arc = parent_arc[node]
        other = int(tails[arc]) if heads[arc] == node else int(heads[arc])
        return arc, (1 if tails[arc] == node else -1), other

    cycles = []
    for arc in np.flatnonzero(~in_tree):
        # Walk head -> ... -> tail through the tree: from the head up, from the tail up, joined.
        u, v = int(heads[arc]), int(tails[arc])
        from_u, from_v = [], []
        while u != v:
            if depth[u] >= depth[v]:
                a, s, u = up(u)
                from_u.append((int(a), s))
            else:
                a, s, v = up(v)
                from_v.append((int(a), -s))
        cycles.append([(int(arc), 1)] + from_u + from_v[::-1])
    return cycles
