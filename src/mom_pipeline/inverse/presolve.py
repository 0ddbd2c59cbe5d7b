"""Optional presolve: drop inequality rows and upper bounds that the other constraints imply.

Every inequality row and every finite upper bound of a variable with a finite lower bound
adds a slack column and a row to the standard form. When the other constraints already
imply it (0 <= x_e <= 1 on the edges of a path, whose flow balance keeps x_e <= 1), that
slack only adds degenerate bases: many bases share one vertex, and MOM (basis formulation)
must pick one. Dropping implied constraints keeps the feasible set and the vertices, with
fewer columns. The user's constraints are still the ones used to check feasibility.

A constraint is implied when max a'x over the other constraints is <= its rhs (one LP
each, HiGHS through scipy). Constraints are tested one after the other against those kept
so far, so that two constraints implied only by each other are not both dropped. Any
subset of a droppable set is droppable, so per-sample constraints drop the intersection
of the samples' sets (the standard forms keep one size).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

from .standard_form import OriginalConstraints

# A constraint counts as implied when the maximum exceeds the rhs by at most this times
# max(1, |rhs|) (HiGHS's primal feasibility tolerance is 1e-7).
IMPLIED_TOL = 1e-7


def _maximum(objective, A_ub, b_ub, A_eq, b_eq, lower, upper) -> float | None:
    """max objective'x over the constraints: None when unbounded or not solved."""
    result = linprog(-objective, A_ub=A_ub if len(A_ub) else None, b_ub=b_ub if len(A_ub) else None,
                     A_eq=A_eq if len(A_eq) else None, b_eq=b_eq if len(A_eq) else None,
                     bounds=np.column_stack([lower, upper]), method="highs")
    return -result.fun if result.status == 0 else None


def implied_constraints(A_ub, b_ub, A_eq, b_eq, lower, upper) -> tuple[np.ndarray, np.ndarray] | None:
    """Which inequality rows and which upper bounds (of variables with a finite lower bound)
    can be dropped together without changing the feasible set of one LP.

    Args:
        A_ub (m_ub, n), b_ub (m_ub,), A_eq (m_eq, n), b_eq (m_eq,), lower, upper (n,).
    Returns:
        (rows (m_ub,) bool, bounds (n,) bool) masks of droppable constraints, or None when
        the LP is infeasible (nothing to learn from it).
    """
    A_ub, b_ub = np.asarray(A_ub, dtype=float), np.asarray(b_ub, dtype=float)
    A_eq, b_eq = np.asarray(A_eq, dtype=float), np.asarray(b_eq, dtype=float)
    lower, upper = np.asarray(lower, dtype=float), np.array(upper, dtype=float)
    n = lower.size
    if _maximum(np.zeros(n), A_ub, b_ub, A_eq, b_eq, lower, upper) is None:
        return None
    rows = np.zeros(len(A_ub), dtype=bool)
    bounds = np.zeros(n, dtype=bool)
    for j in np.flatnonzero(np.isfinite(lower) & np.isfinite(upper)):
        others = upper.copy()
        others[j] = np.inf
        best = _maximum(np.eye(n)[j], A_ub, b_ub, A_eq, b_eq, lower, others)
        if best is not None and best <= upper[j] + IMPLIED_TOL * max(1.0, abs(upper[j])):
            bounds[j] = True
            upper[j] = np.inf  # dropped: later tests must not rely on it
    for i in range(len(A_ub)):
        kept = ~rows
        kept[i] = False
        best = _maximum(A_ub[i], A_ub[kept], b_ub[kept], A_eq, b_eq, lower, upper)
        if best is not None and best <= b_ub[i] + IMPLIED_TOL * max(1.0, abs(b_ub[i])):
            rows[i] = True
    return rows, bounds


def drop_implied_constraints(constraints: OriginalConstraints) -> OriginalConstraints:
    """The constraints without the inequality rows and upper bounds that every (feasible)
    sample's other constraints imply (see `implied_constraints`). One set of m_ub + n small
    LPs for shared constraints, one per distinct sample otherwise (about 2 ms per LP)."""
    samples = [0] if constraints.shared else range(constraints.n_samples)
    rows = np.ones(constraints.A_ub.shape[-2], dtype=bool)
    bounds = np.ones(constraints.n, dtype=bool)
    feasible = 0
    seen = set()
    for t in samples:
        sample = constraints.of(t)
        key = b"|".join(np.ascontiguousarray(arr).tobytes() for arr in sample.values())
        if key in seen:  # samples with the same constraints: the same answer
            continue
        seen.add(key)
        implied = implied_constraints(**sample)
        if implied is not None:
            rows &= implied[0]
            bounds &= implied[1]
            feasible += 1
    if not feasible or not (rows.any() or bounds.any()):
        return constraints
    boxed = np.isfinite(constraints.lower) & np.isfinite(constraints.upper)
    if constraints.A_eq.shape[-2] == 0 and rows.all() and not (boxed & ~bounds).any():
        # Nothing would be left to make a standard-form row: keep one inequality or bound.
        if rows.size:
            rows[0] = False
        else:
            bounds[np.flatnonzero(bounds)[0]] = False
    upper = constraints.upper.copy()
    upper[..., bounds] = np.inf
    return OriginalConstraints(A_ub=constraints.A_ub[..., ~rows, :], b_ub=constraints.b_ub[..., ~rows],
                               A_eq=constraints.A_eq, b_eq=constraints.b_eq, lower=constraints.lower, upper=upper,
                               n_samples=constraints.n_samples)
