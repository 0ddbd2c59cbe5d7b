"""The exact optimum of the hinge QP of `hinge_working_set` by a primal-dual active-set method
on its optimality conditions, from a guess of its margin and violated rows: the working-set
method's finish after its smoothed start, and a regularization path's step from the previous
constant's optimum (`hinge_path`). The margin rows' Gram systems of kernel-sized problems are
solved from one factorization (`MarginSystems`)."""

from __future__ import annotations

import numpy as np

from .box_active_set import free_solve
from .dense_cholesky import cho_factor_symmetric, cho_solve_factor
from .hinge_rows import HingeRowOperator
from . import policy  # its thresholds read at call time

#: `active_set_from_guess` checks its churn (rows changing sets per step) from this step on.
CHURN_AFTER_STEPS = 5
#: Iterative-refinement steps of `active_set_from_guess`'s block-eliminated solves.
INCREMENTAL_REFINEMENTS = 3


def primal_point(rows: HingeRowOperator, index: np.ndarray, gradient: np.ndarray, lam: float,
                 alpha: np.ndarray) -> np.ndarray:
    """w = (gradient + H_W' alpha) / lam: the primal point of multipliers alpha of the rows `index`."""
    return (gradient + rows.weighted_sum_of(index, alpha)) / lam


def active_set_finish(rows: HingeRowOperator, lam: float, weight: float, u: np.ndarray, tol: float,
                       mu: float = 1e-2, max_steps: int = 25, multipliers: dict | None = None):
    """The exact optimum by a primal-dual active-set method on the optimality conditions, or None.

    Optimality: lam w = H' alpha with alpha_i = weight on violated rows (margin < 1),
    0 on satisfied rows (margin > 1) and alpha_i in [0, weight] on margin rows (margin = 1).
    Given a guess of the margin rows E and the violated rows L (from the smoothed start:
    its curved rows are E), w and alpha_E solve a |E| x |E| linear system; rows whose
    alpha or margin contradicts the guess move, until none does (then w is optimal, up to
    tol on the margins). Returns None when the system is singular (more margin rows than
    independent directions) or the guesses cycle: the working-set QP takes over.
    """
    v = 1.0 - u
    return active_set_from_guess(rows, lam, weight, (v > 0) & (v < mu), v >= mu, tol, max_steps,
                                 multipliers=multipliers)


class MarginSystems:
    """Solves the Gram systems H_E H_E' alpha = rhs of margin sets E of one set of rows from one
    Cholesky factorization while E stays close to the factored set (`box_active_set.FreeBlock`).
    The Gram matrix does not depend on lam, so a regularization path shares one."""

    def __init__(self, rows: HingeRowOperator):
        self.rows, self.block = rows, None

    def solve(self, index: np.ndarray, rhs: np.ndarray) -> np.ndarray | None:
        """alpha, or None when the system is singular."""
        block, alpha = free_solve(self.rows.gram_between, self.rows.n_rows, self.block, index, rhs)
        self.block = block
        return alpha


def active_set_from_guess(rows: HingeRowOperator, lam: float, weight: float, margin: np.ndarray,
                          violated: np.ndarray, tol: float, max_steps: int = 25, churn_limit: float = 1.0,
                          margin_systems: MarginSystems | None = None, multipliers: dict | None = None,
                          churn_after: int = CHURN_AFTER_STEPS):
    """`active_set_finish` from a given guess of the margin rows and the violated rows (boolean
    masks over the rows; the rest are guessed satisfied): (w, steps), w None when it gives up.

    A regularization path starts each constant from the sets of the previous one's optimum.
    From step `churn_after` on it gives up when more than `churn_limit` of the rows change
    sets in one step (the guesses oscillate instead of settling). On kernel-sized problems its
    systems are solved by `margin_systems` (a new one when None; a path passes its own along).
    multipliers: when given, a successful guess stores the multipliers of every row there
    (key "alpha"), which certify w (`hinge_working_set.certified`)."""
    margin, violated = margin.copy(), violated.copy()
    alpha_tol = 1e-9 * weight
    # On kernel-sized problems the margin sets of later steps differ in a few rows: their Gram
    # systems are solved from one factorization by block elimination (`FreeBlock`) instead of
    # one factorization per step (narrow RBF kernels: 15-18 steps on 2,100 margin rows).
    incremental = policy.adaptive_working_set(rows.n_vars)
    if incremental and margin_systems is None:
        margin_systems = MarginSystems(rows)
    for step in range(1, max_steps + 1):
        gradient = weight * rows.weighted_sum(violated.astype(float))
        index = np.flatnonzero(margin)
        if index.size > rows.n_vars:
            return None, step  # more margin rows than dimensions: dependent, leave it to the QP
        alpha = np.zeros(0)
        if index.size:
            rhs = lam - rows.margins_of(index, gradient)
            if incremental:
                alpha = margin_systems.solve(index, rhs)
                if alpha is None:
                    return None, step
            else:
                gram = rows.gram(index)
                try:
                    alpha = cho_solve_factor(cho_factor_symmetric(gram), rhs)
                except np.linalg.LinAlgError:
                    return None, step
                if not _solved(gram @ alpha - rhs, rhs):
                    return None, step  # numerically singular: the margin rows are not independent
        w = primal_point(rows, index, gradient, lam, alpha)
        u = rows.margins(w)
        if incremental and index.size:
            # gram alpha - rhs = lam (u - 1) on the margin rows: the residual without the Gram
            # matrix. Block elimination on these ill-conditioned Gram matrices (condition 3e8)
            # leaves margins off by up to 2e-4; iterative refinement with the same solver fixes that.
            for _ in range(INCREMENTAL_REFINEMENTS):
                if np.abs(u[index] - 1.0).max() <= tol:
                    break
                correction = margin_systems.solve(index, lam * (u[index] - 1.0))
                if correction is None:
                    return None, step
                alpha = alpha - correction
                w = primal_point(rows, index, gradient, lam, alpha)
                u = rows.margins(w)
            if not _solved(lam * (u[index] - 1.0), rhs):
                return None, step  # numerically singular
        if index.size and np.abs(u[index] - 1.0).max() > tol:
            # The guessed margin rows are off the margin: the system was solved inaccurately
            # (w divides its residual by lam, large at tiny lam on ill-conditioned rows).
            return None, step
        to_satisfied = np.zeros_like(margin)
        to_violated = np.zeros_like(margin)
        to_satisfied[index] = alpha < -alpha_tol
        to_violated[index] = alpha > weight + alpha_tol
        to_margin = (violated & (u > 1.0 + tol)) | (~violated & ~margin & (u < 1.0 - tol))
        if not (to_satisfied.any() or to_violated.any() or to_margin.any()):
            if multipliers is not None:
                multipliers["alpha"] = np.where(violated, weight, 0.0)
                multipliers["alpha"][index] = alpha
            return w, step
        changes = int(to_satisfied.sum() + to_violated.sum() + to_margin.sum())
        if step >= churn_after and changes > churn_limit * rows.n_rows:
            return None, step
        margin = (margin & ~to_satisfied & ~to_violated) | to_margin
        violated = (violated & ~to_margin) | to_violated
    return None, max_steps


def _solved(residual: np.ndarray, rhs: np.ndarray) -> bool:
    """Whether a linear system's residual is round-off (relative 1e-9 of the right-hand side):
    otherwise it was numerically singular."""
    return bool(np.all(np.abs(residual) <= 1e-9 * np.abs(rhs) + 1e-9 * max(1.0, np.abs(rhs).max())))
