"""Exact batched oracle of the multi-dimensional fractional knapsack (the LP relaxation of
PyEPO's knapsack), vectorized over samples.

Standard form, columns (x_1..x_m, s_1..s_k, u_1..u_m): rows W x + s = cap (k resources), then
x_j + u_j = 1 for every item; n = 2m + k. Eliminating the bound slacks u = 1 - x (and the
resource slacks' costs, c -> c - A'[c_s; c_u], which changes no reduced cost) leaves, per
sample, the LP with k rows and bounded variables

    min q'x  s.t.  W x + s = cap,  0 <= x <= 1,  s >= 0,   q = c_x - W'c_s - c_u,

solved by the primal simplex method for bounded variables, all samples at once: k basic
variables among the items and resource slacks, every other item at its bound 0 or 1. It
starts from the slack basis with a greedy's items at 1 (feasible: they fit), enters the nonbasic variable with
the most improving reduced cost (Dantzig's rule), and lets the ratio test choose between a
bound flip of the entering item and a pivot; each step is O(m) per sample. It stops when every
reduced cost has the sign of optimality (>= 0 at the lower bound, <= 0 at the upper), so the
final basis is optimal. In the standard form that basis is: per item x_j when it is 1 or
basic, u_j when it is 0 or basic, and the basic resource slacks (m + k columns). A sample
still improving after ``MAX_PIVOTS_PER_COLUMN`` x (m + k) steps (cycling on a degenerate vertex)
is solved by HiGHS instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import finite_samples
from .errors import LPInputError
from .highs import LPSolution, solve_lp_batch
from .two_resource_simplex import solve_two_resource

# Relative tolerance of the reduced costs, the ratio test and the zero entries.
TOL = 1e-9
# Simplex steps allowed per column before a sample is handed to HiGHS.
MAX_PIVOTS_PER_COLUMN = 4


@dataclass(frozen=True, eq=False)
class MultiKnapsack:
    """Fractional knapsack with k resources: weights (k, m) >= 0, capacities (k,) > 0."""

    weights: np.ndarray
    capacities: np.ndarray

    def __post_init__(self):
        W = np.array(self.weights, dtype=float, ndmin=2)
        cap = np.array(self.capacities, dtype=float, ndmin=1)
        if W.ndim != 2 or W.size == 0 or cap.shape != (W.shape[0],):
            raise LPInputError(f"weights must be (k, m) and capacities (k,); got {W.shape} and {cap.shape}")
        if not (np.isfinite(W).all() and np.isfinite(cap).all()) or (W < 0).any() or (cap <= 0).any():
            raise LPInputError("weights must be finite and non-negative, capacities finite and positive")
        W.setflags(write=False)
        cap.setflags(write=False)
        object.__setattr__(self, "weights", W)
        object.__setattr__(self, "capacities", cap)

    @property
    def n_resources(self) -> int:
        return self.weights.shape[0]

    @property
    def n_items(self) -> int:
        return self.weights.shape[1]

    def constraints(self) -> tuple[np.ndarray, np.ndarray]:
        """(A, b) of the standard-form LP, A: (k + m, 2m + k), b: (k + m,)."""
        k, m = self.weights.shape
        A = np.zeros((k + m, 2 * m + k))
        A[:k, :m] = self.weights
        A[:k, m:m + k] = np.eye(k)
        A[k:, :m] = np.eye(m)
        A[k:, m + k:] = np.eye(m)
        return A, np.concatenate([self.capacities, np.ones(m)])

    def item_costs(self, C: np.ndarray) -> np.ndarray:
        """(T, m) the items' costs q once the slacks' costs are moved onto them."""
        m, k = self.n_items, self.n_resources
        return C[:, :m] - C[:, m:m + k] @ self.weights - C[:, m + k:]

    def solve(self, C, need_basis: bool = True) -> LPSolution:
        """Solve every sample (C: (T, 2m + k)) exactly. With two resources the closed-form
        simplex of `two_resource_simplex` solves the samples whose optimal basis it certifies
        unique; the others, and every sample of other k, take the general simplex of the
        module docstring. need_basis=False skips the basis (`basis` is None)."""
        k, m = self.weights.shape
        n = 2 * m + k
        C = finite_samples("C", C, n_columns=n, min_samples=1, one_sample_as_row=True, error=LPInputError)
        if k != 2:
            general = self._general_simplex(C)
            return general if need_basis else LPSolution(x=general.x, objective=general.objective, basis=None)
        certified, X_items, slack, basis, at_upper = solve_two_resource(self.item_costs(C), self.weights,
                                                                        self.capacities)
        X = np.concatenate([X_items, slack, 1.0 - X_items], axis=1)
        standard_basis = _standard_basis(basis, at_upper, m, k) if need_basis else None
        objective = np.einsum("tn,tn->t", C, X)
        rest = np.flatnonzero(~certified)
        if len(rest):
            general = self._general_simplex(C[rest])
            X[rest], objective[rest] = general.x, general.objective
            if need_basis:
                standard_basis[rest] = general.basis
        return LPSolution(x=X, objective=objective, basis=standard_basis)

    def _general_simplex(self, C: np.ndarray) -> LPSolution:
        """The bounded-variable simplex of the module docstring on every sample of C (checked)."""
        k, m = self.weights.shape
        T = len(C)
        W, cap = self.weights, self.capacities
        M = np.concatenate([W, np.eye(k)], axis=1)  # (k, m + k): the items, then the resource slacks
        q = np.concatenate([self.item_costs(C), np.zeros((T, k))], axis=1)
        upper = np.concatenate([np.ones(m), np.full(k, np.inf)])
        basis = np.tile(np.arange(m, m + k), (T, 1))
        at_upper = np.zeros((T, m + k), dtype=bool)
        at_upper[:, :m] = _greedy_start(q[:, :m], W, cap)
        scale = 1.0 + np.abs(q).max(axis=1)
        active = np.arange(T)
        for _ in range(MAX_PIVOTS_PER_COLUMN * (m + k)):
            if not len(active):
                break
            inverse, x_basic, reduced = _basis_state(M, cap, q[active], basis[active], at_upper[active], m)
            is_basic = np.zeros((len(active), m + k), dtype=bool)
            np.put_along_axis(is_basic, basis[active], True, axis=1)
            tol = TOL * scale[active][:, None]
            flag = at_upper[active]
            improving = ~is_basic & ((~flag & (reduced < -tol)) | (flag & (reduced > tol)))
            moving = improving.any(axis=1)
            active, inverse, x_basic, flag = active[moving], inverse[moving], x_basic[moving], flag[moving]
            if not len(active):
                break
            rows = np.arange(len(active))
            entering = np.argmax(np.where(improving[moving], np.abs(reduced[moving]), -1.0), axis=1)
            direction = np.where(flag[rows, entering], -1.0, 1.0)
            rate = direction[:, None] * np.einsum("tij,jt->ti", inverse, M[:, entering])  # > 0: basic falls
            bound = upper[basis[active]]
            falls = np.where(rate > TOL, x_basic / np.where(rate > TOL, rate, 1.0), np.inf)
            rises = np.where(rate < -TOL, (bound - x_basic) / np.where(rate < -TOL, -rate, 1.0), np.inf)
            limit = np.minimum(falls, rises)
            leaving = np.argmin(limit, axis=1)
            step = limit[rows, leaving]
            flip = upper[entering] <= step
            at_upper[active[flip], entering[flip]] = ~at_upper[active[flip], entering[flip]]
            pivot = ~flip
            t, r = active[pivot], leaving[pivot]
            out = basis[t, r]
            at_upper[t, out] = rises[rows[pivot], r] < falls[rows[pivot], r]
            basis[t, r] = entering[pivot]
            at_upper[t, entering[pivot]] = False
        unsolved = active
        _, x_basic, _ = _basis_state(M, cap, q, basis, at_upper, m)
        values = at_upper.astype(float)
        np.put_along_axis(values, basis, x_basic, axis=1)
        values[np.abs(values) <= TOL] = 0.0
        X_items, slack = values[:, :m], values[:, m:]
        X_items[np.abs(X_items - 1) <= TOL] = 1.0
        X = np.concatenate([X_items, slack, 1.0 - X_items], axis=1)
        standard_basis = _standard_basis(basis, at_upper[:, :m], m, k)
        objective = np.einsum("tn,tn->t", C, X)
        if len(unsolved):
            A, b = self.constraints()
            exact = solve_lp_batch(A, b, C[unsolved])
            X[unsolved], objective[unsolved], standard_basis[unsolved] = exact.x, exact.objective, exact.basis
        return LPSolution(x=X, objective=objective, basis=standard_basis)


def _standard_basis(basis, items_at_upper, m: int, k: int) -> np.ndarray:
    """(T, m + k) sorted standard-form basis of a bounded-variable basis (T, k) over the items
    (0..m-1) and resource slacks (m..m+k-1): per item x_j if it is at 1, u_j if at 0; a
    basic item adds the other one, a basic slack itself."""
    items = np.arange(m)
    per_item = np.where(items_at_upper, items, m + k + items)
    other = np.where(items_at_upper, m + k + items, items)
    extra = np.where(basis < m, np.take_along_axis(other, np.minimum(basis, m - 1), axis=1), basis)
    return np.sort(np.concatenate([per_item, extra], axis=1), axis=1)


def _greedy_start(Q, W, cap) -> np.ndarray:
    """(T, m) the items a feasible start takes (at their upper bound 1, the resource slacks
    basic): the items of negative cost in the order of their cost per share of the capacities,
    each while it still fits in every resource. It saves the simplex the bound flips of the
    items a greedy would take anyway; optimality is still the simplex's to reach."""
    density = np.where(Q < 0, Q / (W / cap[:, None]).sum(axis=0), np.inf)
    order = np.argsort(density, axis=1, kind="stable")
    rows = np.arange(len(Q))[:, None]
    wanted = Q[rows, order] < 0
    take = np.zeros(Q.shape, dtype=bool)
    load = np.zeros((len(Q), len(cap)))
    for position in range(Q.shape[1]):  # m steps over all samples at once
        item = order[:, position]
        weight = W[:, item].T  # (T, k)
        fits = wanted[:, position] & (load + weight <= cap).all(axis=1)
        take[rows[:, 0], item] = fits
        load += np.where(fits[:, None], weight, 0.0)
    return take


def _basis_state(M, cap, q, basis, at_upper, m: int):
    """Per sample: the basis inverse (t, k, k), the basic values (t, k) with the items at
    their upper bound taken out of cap, and every column's reduced cost (t, m + k)."""
    B = np.transpose(M[:, basis], (1, 0, 2))  # (t, k, k): column i is the basic column i
    inverse = np.linalg.inv(B)
    rhs = cap - at_upper[:, :m] @ M[:, :m].T
    x_basic = np.einsum("tij,tj->ti", inverse, rhs)
    duals = np.einsum("tji,tj->ti", inverse, np.take_along_axis(q, basis, axis=1))
    return inverse, x_basic, q - duals @ M
