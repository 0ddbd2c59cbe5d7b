"""Hinge-QP solutions at tiny lam: margin rows put exactly on the margin, and a duality gap
computed without cancellation.

Both act on a restricted hinge QP of the working-set method (the rows `index`, with the rows
assumed violated folded into `gradient`):

    P(w) = (lam/2) ||w||^2 - gradient'w + weight * sum_{i in index} max(0, 1 - h_i'w)

(index None and gradient None: every row and no gradient, the MOM problem itself).

Why they are needed: a dual solver returns w = (gradient + H'alpha) / lam. At the scaled lam of
kernel MOM at lam = 1e-6 (1e-15 to 1e-12) that numerator nearly cancels, so w's margins are good
to about 1e-5 only, and so is any gap computed from the box dual's objective (it holds the same
cancellation, divided by lam). `polish_margin_rows` repairs the margins from the primal residual;
`restricted_gap` certifies the result from quantities that do not cancel.
"""

from __future__ import annotations

import numpy as np

from .dense_cholesky import cho_factor_symmetric, cho_solve_factor
from .hinge_rows import HingeRowOperator

#: Below this (rescaled) lam the working-set method's solutions get `polish_margin_rows` (RBF
#: kernel MOM at lam 1e-6, scaled 2e-14: 3.3e-6 above the optimum without it; polynomial degree
#: 3, gamma 5 at lam 1e-4, scaled 2e-12: 1.3e-7 above cvxpy's point with 1e-12 here, certified
#: within 8e-10 of the optimum with 1e-9).
POLISH_BELOW_LAM = 1e-9
#: The same threshold for a path's intermediate constants, which are warm starts only (the old
#: threshold: polishing them too cost the narrow RBF cell 2 s of its 5.6 s).
POLISH_WARM_START_BELOW = 1e-12
#: Rows within this of the margin are the ones `polish_margin_rows` puts exactly on it.
POLISH_BANDS = (1e-4, 1e-6)


def restricted_objective(rows: HingeRowOperator, lam: float, weight: float, w: np.ndarray,
                         index: np.ndarray | None = None, gradient: np.ndarray | None = None,
                         margins: np.ndarray | None = None) -> float:
    """P(w), evaluated from w itself (margins: those of the rows `index` at w, when at hand)."""
    if margins is None:
        margins = rows.margins(w) if index is None else rows.margins_of(index, w)
    linear = 0.0 if gradient is None else float(gradient @ w)
    return float(0.5 * lam * w @ w - linear + weight * np.maximum(0.0, 1.0 - margins).sum())


def hinge_objective(rows: HingeRowOperator, lam: float, weight: float, w: np.ndarray,
                    margins: np.ndarray | None = None) -> float:
    """(lam/2)||w||^2 + weight * sum_i max(0, 1 - h_i'w) over every row, evaluated from w itself."""
    return restricted_objective(rows, lam, weight, w, margins=margins)


def polish_margin_rows(rows: HingeRowOperator, lam: float, weight: float, w: np.ndarray,
                       index: np.ndarray | None = None, gradient: np.ndarray | None = None,
                       bands: tuple = POLISH_BANDS, solve=None) -> np.ndarray:
    """w, or w moved to put its margin rows exactly on the margin when that lowers P.

    The step w + H_E' delta with G_EE delta = 1 - H_E w (E: the rows within a band of the
    margin, for each band in turn) sets those margins to 1 from the primal residual, with no
    division by lam, and keeps w in the span of the rows, as the optimality conditions want
    it. It is kept only if P, evaluated from w itself, falls: the result is never worse than w.
    solve: None, or a function (rows, rhs) -> G^-1 rhs (None when singular) that solves the Gram
    systems of sets of rows from a factorization at hand (a regularization path's
    `MarginSystems`) instead of a new one.
    """
    index = np.arange(rows.n_rows) if index is None else index
    u = rows.margins_of(index, w)
    best, best_value = w, restricted_objective(rows, lam, weight, w, index, gradient, u)
    tried = np.zeros(0, dtype=int)
    for band in bands:
        near = np.abs(u - 1.0) <= band
        on_margin = index[near]
        if not 0 < on_margin.size <= rows.n_vars or np.array_equal(on_margin, tried):
            continue  # nothing to polish, a singular system, or the same rows as the wider band
        tried = on_margin
        if solve is not None:
            delta = solve(on_margin, 1.0 - u[near])
            if delta is None:
                continue
        else:
            try:
                factor = cho_factor_symmetric(rows.gram(on_margin), overwrite=True)
            except np.linalg.LinAlgError:
                continue
            delta = cho_solve_factor(factor, 1.0 - u[near])
        polished = w + rows.weighted_sum_of(on_margin, delta)
        value = restricted_objective(rows, lam, weight, polished, index, gradient)
        if np.isfinite(value) and value < best_value:
            best, best_value = polished, value
    return best


def restricted_gap(rows: HingeRowOperator, lam: float, weight: float, w: np.ndarray, alpha: np.ndarray,
                   index: np.ndarray, gradient: np.ndarray) -> float:
    """P(w) - D(alpha) for any w and multipliers alpha of the rows `index` (clipped into
    [0, weight]): an upper bound on P(w) - min P.

    D(alpha) = -||gradient + H'alpha||^2 / (2 lam) + sum(alpha) is the Lagrange dual, and

        P(w) - D(alpha) = ||lam w - gradient - H'alpha||^2 / (2 lam)
                          + sum_i [weight max(0, 1 - m_i) - alpha_i (1 - m_i)],   m = H w,

    where every term is non-negative and none is a difference of large numbers: the first is a
    residual of size round-off at a stationary pair (squared, then divided by lam), the second
    comes from the margins of w itself. Evaluated as P(w) - D(alpha), the same number carries
    the cancellation of the box dual's objective at tiny lam.
    """
    alpha = np.clip(alpha, 0.0, weight)
    margins = rows.margins_of(index, w)
    residual = lam * w - gradient - rows.weighted_sum_of(index, alpha)
    slack = weight * np.maximum(0.0, 1.0 - margins) - alpha * (1.0 - margins)
    return float(residual @ residual / (2.0 * lam) + slack.sum())


def margin_multipliers(rows: HingeRowOperator, lam: float, weight: float, w: np.ndarray, index: np.ndarray,
                       gradient: np.ndarray, band: float = 1e-6) -> np.ndarray:
    """Multipliers of the rows `index` fitted to w: weight on rows below the margin by more than
    band, 0 above it, and on the rows within band of the margin the least-squares solution of
    the stationarity lam w = gradient + H'alpha (clipped into [0, weight] by `restricted_gap`).

    An interior-point method's own multipliers certify nothing at tiny lam: their stationarity
    residual, squared and divided by lam (1e-14), dominates the gap of a point at the optimum.
    Fitted to w (polished onto the margin) they certify it (a restricted QP of 387 rows at scaled
    lam 1.2e-14: gap 1.4e5 with the solver's multipliers, 3.6e-13 with these)."""
    u = rows.margins_of(index, w)
    on_margin, below = np.abs(u - 1.0) <= band, u < 1.0 - band
    alpha = np.where(below, weight, 0.0)
    if on_margin.any():
        target = lam * w - gradient - rows.weighted_sum_of(index[below], np.full(int(below.sum()), weight))
        alpha[on_margin] = np.linalg.lstsq(rows.dense_rows(index[on_margin]).T, target, rcond=None)[0]
    return alpha
