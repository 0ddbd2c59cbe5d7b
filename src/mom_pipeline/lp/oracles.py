"""Exact decision oracles vectorized over samples, each returning an optimal basis.

* Shortest path on a grid DAG (edges west->east and south->north): dynamic programming
  over the nodes in topological order, all samples at once. The predecessor edges of the
  shortest-path tree form a spanning tree, i.e. a basis of the flow-balance LP with one
  row dropped, and the DP distances are node potentials that make it dual feasible.
* Fractional knapsack  min c_x'x + c_s1 s1 + c_s2's2  s.t. p'x + s1 = B, x + s2 = 1:
  greedy by utility/price ratio, all samples at once, with the basis of the critical item.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..checks import finite_samples
from .errors import LPInputError
from .highs import LPSolution


def _check_costs(C, n: int) -> np.ndarray:
    """C as a finite (T, n) float array, T >= 1 (the oracles' constraints are valid by construction)."""
    return finite_samples("C", C, n_columns=n, min_samples=1, one_sample_as_row=True, error=LPInputError)


@dataclass(frozen=True)
class GridShortestPath:
    """Shortest path from the south-west to the north-east corner of an h x w grid.

    Nodes are numbered row by row from the south-west corner (node = row * w + col).
    Edge order follows the common convention of PyEPO and the released MOM code: for each
    row, its west->east edges, then the south->north edges leaving that row.
    Flow balance: A[v, e] = +1 if e enters v, -1 if e leaves v; b = -1 at the source;
    the sink's row is dropped (it is implied by the others), so A is (h*w - 1) x n.
    """

    height: int = 5
    width: int = 5

    def __post_init__(self):
        if self.height < 1 or self.width < 1 or self.height * self.width < 2:
            raise LPInputError(f"grid must have at least 2 nodes; got {self.height} x {self.width}")

    @property
    def n_nodes(self) -> int:
        return self.height * self.width

    @cached_property
    def arcs(self) -> np.ndarray:
        """(n, 2) array of (tail, head) node pairs in column order."""
        h, w = self.height, self.width
        arcs = []
        for i in range(h):
            for j in range(w - 1):
                v = i * w + j
                arcs.append((v, v + 1))
            if i < h - 1:
                for j in range(w):
                    v = i * w + j
                    arcs.append((v, v + w))
        return np.asarray(arcs, dtype=np.int64)

    @property
    def n_edges(self) -> int:
        return len(self.arcs)

    @cached_property
    def _diagonals(self) -> list[tuple[np.ndarray, ...]]:
        """Per anti-diagonal i + j = k (k >= 1): its nodes and, for each, the west and south
        predecessor nodes and incoming edges. A missing predecessor points at a dummy node
        n_nodes (distance +inf) through a dummy edge n (cost 0). All predecessors of a
        diagonal lie on the previous one, so the DP runs one vectorized step per diagonal."""
        h, w = self.height, self.width
        edge_of = {(int(t), int(hd)): e for e, (t, hd) in enumerate(self.arcs)}
        dummy_node, dummy_edge = self.n_nodes, self.n_edges
        out = []
        for k in range(1, h + w - 1):
            nodes, west_node, west_edge, south_node, south_edge = [], [], [], [], []
            for i in range(max(0, k - w + 1), min(h - 1, k) + 1):
                j = k - i
                v = i * w + j
                nodes.append(v)
                west_node.append(v - 1 if j > 0 else dummy_node)
                west_edge.append(edge_of[(v - 1, v)] if j > 0 else dummy_edge)
                south_node.append(v - w if i > 0 else dummy_node)
                south_edge.append(edge_of[(v - w, v)] if i > 0 else dummy_edge)
            out.append(tuple(np.asarray(a, dtype=np.int64) for a in
                             (nodes, west_node, west_edge, south_node, south_edge)))
        return out

    def constraints(self) -> tuple[np.ndarray, np.ndarray]:
        """(A, b) of the standard-form LP, A: (h*w - 1, n), b: (h*w - 1,)."""
        arcs = self.arcs
        A = np.zeros((self.n_nodes, len(arcs)))
        A[arcs[:, 1], np.arange(len(arcs))] = 1.0
        A[arcs[:, 0], np.arange(len(arcs))] = -1.0
        b = np.zeros(self.n_nodes)
        b[0] = -1.0
        return A[:-1], b[:-1]

    MAX_ENUMERATED_PATHS = 5000

    @cached_property
    def _path_matrix(self) -> np.ndarray | None:
        """(n_paths, n) 0/1 edge incidence of every source-sink path, or None when there are
        more than MAX_ENUMERATED_PATHS (C(h + w - 2, h - 1) paths)."""
        h, w = self.height, self.width
        if math.comb(h + w - 2, h - 1) > self.MAX_ENUMERATED_PATHS:
            return None
        edge_of = {(int(t), int(hd)): e for e, (t, hd) in enumerate(self.arcs)}
        paths = []
        for north_steps in itertools.combinations(range(h + w - 2), h - 1):
            row = np.zeros(self.n_edges)
            v = 0
            for step in range(h + w - 2):
                nxt = v + w if step in north_steps else v + 1
                row[edge_of[(v, nxt)]] = 1.0
                v = nxt
            paths.append(row)
        return np.asarray(paths)

    def solve(self, C, need_basis: bool = True) -> LPSolution:
        """Solve every sample; C is (T, n). Returns x, objective and (by DP) the basis.

        need_basis=False (small grids): x and the objective only, by evaluating every path
        at once (one matrix product), much cheaper for the small batches of SGD methods;
        `basis` is then None. Ties between optimal paths may then resolve differently.
        """
        if not need_basis and self._path_matrix is not None:
            C = _check_costs(C, self.n_edges)
            values = C @ self._path_matrix.T
            best = values.argmin(axis=1)
            return LPSolution(x=self._path_matrix[best], objective=values[np.arange(len(C)), best], basis=None)
        C = _check_costs(C, self.n_edges)
        T = C.shape[0]
        arcs = self.arcs
        costs = np.concatenate([C, np.zeros((T, 1))], axis=1)  # + the dummy edge
        dist = np.zeros((T, self.n_nodes + 1))
        dist[:, -1] = np.inf  # the dummy node
        pred = np.full((T, self.n_nodes), -1, dtype=np.int64)
        rows = np.arange(T)
        for nodes, west_node, west_edge, south_node, south_edge in self._diagonals:
            via_west = dist[:, west_node] + costs[:, west_edge]
            via_south = dist[:, south_node] + costs[:, south_edge]
            take_west = via_west <= via_south  # ties go west
            dist[:, nodes] = np.where(take_west, via_west, via_south)
            pred[:, nodes] = np.where(take_west, west_edge, south_edge)
        X = np.zeros((T, len(arcs)))
        node = np.full(T, self.n_nodes - 1)
        for _ in range(self.height + self.width - 2):
            edge = pred[rows, node]
            X[rows, edge] = 1.0
            node = arcs[edge, 0]
        basis = np.sort(pred[:, 1:], axis=1)
        return LPSolution(x=X, objective=np.einsum("tn,tn->t", C, X), basis=basis)


@dataclass(frozen=True)
class FractionalKnapsack:
    """Fractional knapsack in standard form with columns (x_1..x_k, s1, s2_1..s2_k).

    Rows: budget p'x + s1 = B, then x_j + s2_j = 1 for every item; n = 2k + 1, m = k + 1.
    Prices must be positive and the budget non-negative.
    """

    prices: tuple
    budget: float

    def __post_init__(self):
        prices = np.asarray(self.prices, dtype=float)
        if prices.ndim != 1 or prices.size == 0:
            raise LPInputError(f"prices must be a non-empty vector; got shape {prices.shape}")
        if not np.all(np.isfinite(prices)) or np.any(prices <= 0):
            raise LPInputError("prices must be finite and positive")
        if not np.isfinite(self.budget) or self.budget < 0:
            raise LPInputError(f"budget must be finite and non-negative; got {self.budget}")
        object.__setattr__(self, "prices", tuple(float(p) for p in prices))
        object.__setattr__(self, "budget", float(self.budget))

    @property
    def n_items(self) -> int:
        return len(self.prices)

    def constraints(self) -> tuple[np.ndarray, np.ndarray]:
        """(A, b) of the standard-form LP, A: (k + 1, 2k + 1), b: (k + 1,)."""
        k = self.n_items
        A = np.zeros((k + 1, 2 * k + 1))
        A[0, :k] = self.prices
        A[0, k] = 1.0
        A[1:, :k] = np.eye(k)
        A[1:, k + 1 :] = np.eye(k)
        b = np.concatenate([[self.budget], np.ones(k)])
        return A, b

    def solve(self, C, need_basis: bool = True) -> LPSolution:
        """Solve every sample by the ratio greedy; C is (T, 2k + 1). The basis costs a little
        more bookkeeping; need_basis=False (SGD steps, evaluation) skips it (`basis` is None)."""
        k = self.n_items
        C = _check_costs(C, 2 * k + 1)
        T = C.shape[0]
        p = np.asarray(self.prices)
        budget = self.budget
        # Eliminate the slacks: s1 = B - p'x and s2 = 1 - x give item costs c_x - c_s1 p - c_s2.
        item_cost = C[:, :k] - C[:, [k]] * p - C[:, k + 1 :]
        wanted = item_cost < 0
        ratio = np.where(wanted, -item_cost / p, -np.inf)
        order = np.argsort(-ratio, axis=1, kind="stable")
        rows = np.arange(T)
        # Plain fancy indexing by (rows, order): take/put_along_axis's own overhead was a
        # quarter of this oracle's time on SPO+'s 225-sample batches.
        by_rank = (rows[:, None], order)
        sorted_wanted = wanted[by_rank]
        sorted_price = np.where(sorted_wanted, p[order], 0.0)
        cum_after = np.cumsum(sorted_price, axis=1)
        cum_before = cum_after - sorted_price
        fits = sorted_wanted & (cum_after <= budget * (1 + 1e-12))
        # The critical item: the first wanted item that does not fit completely.
        over = sorted_wanted & ~fits
        has_critical = over.any(axis=1)
        crit_pos = np.argmax(over, axis=1)
        crit_item = order[rows, crit_pos]
        # Wanted items after the critical one have a larger running total, so they never fit.
        x_items = np.zeros((T, k))
        x_items[by_rank] = fits
        crit_fraction = np.clip((budget - cum_before[rows, crit_pos]) / p[crit_item], 0.0, 1.0)
        x_items[rows[has_critical], crit_item[has_critical]] = crit_fraction[has_critical]
        X = np.zeros((T, 2 * k + 1))
        X[:, :k] = x_items
        X[:, k] = budget - x_items @ p
        X[:, k + 1 :] = 1.0 - x_items
        X[np.abs(X) <= 1e-12 * max(1.0, budget)] = 0.0
        basis = None
        if need_basis:
            # Basis: x_j for fully taken items, s2_j for the others; the critical item has both
            # x and s2 basic; without a critical item the budget slack s1 is basic.
            full = np.zeros((T, k), dtype=bool)
            full[by_rank] = fits
            item_idx = np.arange(k)
            per_item = np.where(full, item_idx, k + 1 + item_idx)
            extra = np.where(has_critical, crit_item, k)
            basis = np.sort(np.column_stack([per_item, extra]), axis=1)
        return LPSolution(x=X, objective=np.einsum("tn,tn->t", C, X), basis=basis)
