"""The two-resource fractional knapsack's simplex in closed form, with a certificate of the
unique optimal basis; the fast path of `multi_knapsack.MultiKnapsack.solve` when k = 2.

Per sample, with the items' costs q (slack costs moved onto them):

    min q'x  s.t.  W x + s = cap,  0 <= x <= 1,  s >= 0,   W: (2, m) >= 0.

A basis has two columns among the m items and the 2 resource slacks, so its inverse, basic
values and duals are 2 x 2 formulas (no batched `inv`). The start takes, in the greedy
order of cost per share of the capacities, the longest prefix of the wanted (q < 0) items
that fits in both resources, all at 1, with both slacks basic; from there the bounded-variable
primal simplex (Dantzig's rule) runs on every sample at once. A sample is certified when the
final basis is the LP's unique optimal basis with room to spare:

* dual margin: every nonbasic reduced cost has the optimal sign by more than
  4 TOL (1 + max|q|) (1 + kappa), kappa the 1-norm condition number of the basis;
* primal margin: every basic value is more than 4 TOL (1 + max cap) (1 + kappa) inside its
  bounds (no degenerate vertex, hence one basis).

A unique optimum is what any exact solver returns, so a certified sample's solution and
basis are the general simplex's up to round-off. Samples not certified (ties, degenerate
vertices, more than ``MAX_PIVOTS`` steps) are left to the caller.
"""

from __future__ import annotations

import numpy as np

# Relative tolerance of the reduced costs and the ratio test (as the general simplex's).
TOL = 1e-9
# Certified margins are this many tolerances (times 1 + kappa) away from the sign changes.
MARGIN_FACTOR = 4.0
# Simplex steps run before the samples still improving are left uncertified.
MAX_PIVOTS = 64


def greedy_prefix(Q: np.ndarray, W: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """(T, m) bool: the longest prefix of the wanted items (Q < 0) in the order of their
    cost per share of the capacities that fits in every resource. The weights are
    non-negative, so the running loads only grow and the fitting positions are a prefix;
    the wanted items come first in that order."""
    T, m = Q.shape
    density = np.where(Q < 0, Q / (W / cap[:, None]).sum(axis=0), np.inf)
    order = np.argsort(density, axis=1)  # ties in any order: the start changes no certified optimum
    # no set of more items than the lightest that fit in some resource fits at all
    longest = min(int((np.cumsum(np.sort(weights)) <= capacity).sum()) for weights, capacity in zip(W, cap))
    order = order[:, :longest]
    fits = np.arange(longest) < (Q < 0).sum(axis=1)[:, None]
    for weights, capacity in zip(W, cap):  # one contiguous (T, longest) running load per resource
        fits &= np.cumsum(weights[order], axis=1) <= capacity
    take = np.zeros((T, m), dtype=bool)
    take[np.arange(T)[:, None], order] = fits
    return take


def solve_two_resource(Q: np.ndarray, W: np.ndarray, cap: np.ndarray):
    """Run the closed-form simplex on every sample of Q (T, m).

    Returns:
        certified (T,) bool, and for every sample: x (T, m) the items' values, slack (T, 2),
        basis (T, 2) the basic columns (items 0..m-1, slacks m, m + 1) and at_upper (T, m)
        the nonbasic items at 1. Only the certified samples' rows are meaningful.
    """
    T, m = Q.shape
    columns = np.concatenate([W, np.eye(2)], axis=1)  # (2, m + 2)
    top, bottom = columns  # each column's entries in the two resource rows
    upper = np.concatenate([np.ones(m), np.full(2, np.inf)])
    scale = 1.0 + np.abs(Q).max(axis=1)
    primal_margin = MARGIN_FACTOR * TOL * (1.0 + cap.max())
    # The working set, compacted every step: the samples still improving. sign is -1 for a
    # nonbasic item at 1 and +1 otherwise, so sign * reduced cost < 0 marks an improving column.
    index = np.arange(T)
    q = np.concatenate([Q, np.zeros((T, 2))], axis=1)
    start = greedy_prefix(Q, W, cap)
    sign = np.ones((T, m + 2))
    sign[:, :m] -= 2.0 * start
    load = start @ W.T.astype(float)  # (T, 2) the weight of the items at 1
    first, second = np.full(T, m), np.full(T, m + 1)  # the basic columns
    certified = np.zeros(T, dtype=bool)
    final_sign = np.ones((T, m + 2))
    final_basis = np.zeros((T, 2), dtype=np.int64)
    final_values = np.zeros((T, 2))
    for pivots in range(MAX_PIVOTS + 1):
        rows = np.arange(len(index))
        a, b, c, d = top[first], top[second], bottom[first], bottom[second]
        det = a * d - b * c
        rhs = cap - load
        x0, x1 = (d * rhs[:, 0] - b * rhs[:, 1]) / det, (a * rhs[:, 1] - c * rhs[:, 0]) / det
        q0, q1 = q[rows, first], q[rows, second]
        duals = np.column_stack([(d * q0 - c * q1) / det, (a * q1 - b * q0) / det])
        signed = duals @ columns
        np.subtract(q, signed, out=signed)
        signed *= sign
        signed[rows, first] = np.inf
        signed[rows, second] = np.inf
        entering = np.argmin(signed, axis=1)
        best = signed[rows, entering]
        done = best >= -TOL * scale[index]
        if done.any():
            kappa = np.maximum(np.abs(a) + np.abs(c), np.abs(b) + np.abs(d)) * np.maximum(
                np.abs(d) + np.abs(c), np.abs(b) + np.abs(a)) / np.abs(det)
            room = np.minimum(np.minimum(x0, upper[first] - x0), np.minimum(x1, upper[second] - x1))
            certificate = (best > MARGIN_FACTOR * TOL * scale[index] * (1.0 + kappa)) & (
                room > primal_margin * (1.0 + kappa))
            finished = index[done]
            certified[finished] = certificate[done]
            final_sign[finished] = sign[done]
            final_basis[finished, 0], final_basis[finished, 1] = first[done], second[done]
            final_values[finished, 0], final_values[finished, 1] = x0[done], x1[done]
            moving = ~done
            index, q, sign, load = index[moving], q[moving], sign[moving], load[moving]
            first, second, a, b, c, d, det, x0, x1, entering = (
                v[moving] for v in (first, second, a, b, c, d, det, x0, x1, entering))
            rows = rows[:len(index)]
        if not len(index) or pivots == MAX_PIVOTS:
            break
        direction = sign[rows, entering]  # +1: the entering column rises from 0, -1: falls from 1
        column0, column1 = top[entering], bottom[entering]
        rate0 = direction * (d * column0 - b * column1) / det  # > 0: the basic value falls
        rate1 = direction * (a * column1 - c * column0) / det
        falls0, rises0 = _limits(x0, rate0, upper[first])
        falls1, rises1 = _limits(x1, rate1, upper[second])
        limit0, limit1 = np.minimum(falls0, rises0), np.minimum(falls1, rises1)
        second_leaves = limit1 < limit0
        flip = upper[entering] <= np.minimum(limit0, limit1)
        sign[rows[flip], entering[flip]] *= -1.0
        load[flip] -= sign[rows[flip], entering[flip]][:, None] * columns[:, entering[flip]].T
        # a pivot: the leaving column goes to the bound it reached (a slack only to 0)
        for leaves, limit_rises, limit_falls, basic in ((~flip & ~second_leaves, rises0, falls0, first),
                                                        (~flip & second_leaves, rises1, falls1, second)):
            t = rows[leaves]
            out, into = basic[t], entering[t]
            to_upper = (out < m) & (limit_rises[t] < limit_falls[t])
            load[t] += (to_upper[:, None] * columns[:, out].T - (sign[t, into] < 0)[:, None] * columns[:, into].T)
            sign[t, out] = np.where(to_upper, -1.0, 1.0)
            basic[t] = into
            sign[t, into] = 1.0
    items_at_upper = final_sign[:, :m] < 0
    values = (1.0 - final_sign) / 2.0
    np.put_along_axis(values, final_basis, final_values, axis=1)
    return certified, values[:, :m], values[:, m:], final_basis, items_at_upper


def _limits(x_basic, rate, bound):
    """The step at which a basic value falls to 0 (rate > 0) and rises to its bound (rate < 0)."""
    falls = np.where(rate > TOL, np.maximum(x_basic, 0.0) / np.where(rate > TOL, rate, 1.0), np.inf)
    rises = np.where(rate < -TOL, np.maximum(bound - x_basic, 0.0) / np.where(rate < -TOL, -rate, 1.0), np.inf)
    return falls, rises
