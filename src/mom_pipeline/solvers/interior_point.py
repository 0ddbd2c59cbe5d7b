"""Dense primal-dual interior-point methods (Mehrotra predictor-corrector) for two QP shapes
that the generic conic solver handles slowly: a box-constrained QP with a dense k x k matrix
(`box_qp`), and an L2-regularized hinge loss with many rows and few unknowns (`hinge_qp_ipm`,
p x p Newton systems, stopped by a duality-gap certificate)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from .dense_cholesky import cho_factor_gram, cho_factor_symmetric, cho_solve_factor, qr_factor_gram
from .result import SolverResult


def longest_step(*pairs) -> float:
    """The largest t <= 1 keeping every value + t * change >= 0 (pairs of positive arrays and
    their directions): the fraction-to-boundary rule of the interior-point methods below."""
    # One pass over all pairs at once: a handful of numpy calls instead of several per pair
    # (the methods call this twice per iteration on vectors of a few hundred entries).
    return step_to_boundary(np.concatenate([value for value, _ in pairs]),
                            np.concatenate([change for _, change in pairs]))


def step_to_boundary(values: np.ndarray, changes: np.ndarray) -> float:
    """`longest_step` of pairs already concatenated (values > 0 and their changes; `box_qp`
    concatenates its values once for both of an iteration's steps)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(changes < 0, -values / changes, np.inf)
    return min(1.0, float(ratios.min()))


def box_gap(Q: np.ndarray, c: np.ndarray, upper: float, a: np.ndarray) -> float:
    """A duality-gap certificate of a feasible a of the box QP: f(a) - f* <= box_gap.

    With g = Qa + c, the multipliers z_l = max(g, 0), z_u = max(-g, 0) satisfy the dual
    equality exactly, and the gap of that primal-dual pair is sum_i a_i g_i where g_i >= 0,
    (upper - a_i)|g_i| where g_i < 0 (>= 0 term by term). For the dual of a hinge QP it is
    the hinge QP's own duality gap at w(a), in the hinge objective's units."""
    return box_gap_of_gradient(Q @ a + c, upper, a)


def box_gap_of_gradient(g: np.ndarray, upper: float, a: np.ndarray) -> float:
    """`box_gap` from the gradient g = Q a + c when it is already at hand."""
    return float(np.where(g >= 0, a * g, (upper - a) * -g).sum())


class HingeIPMStalled(RuntimeError):
    """`hinge_qp_ipm` stopped before its certificate; `w` and `alpha` are its last iterate, often
    at the optimum already when the stop failed only because lam is tiny (the certificate's
    stationarity term is divided by lam: `margin_polish.margin_multipliers` certifies such points)."""

    def __init__(self, message: str, w: np.ndarray, alpha: np.ndarray):
        super().__init__(message)
        self.w, self.alpha = w, alpha


class BoxQPStalled(RuntimeError):
    """`box_qp` stopped before its tolerances; `iterate` is its last point (a guess of the active
    sets for `box_active_set.box_qp_active_set`)."""

    def __init__(self, message: str, iterate: np.ndarray):
        super().__init__(message)
        self.iterate = iterate


#: `box_qp` ends (as at a breakdown: its fallback point, or `BoxQPStalled`) when its duality gap
#: has not halved its best value for this many iterations.
STALL_ITERATIONS = 6
#: `box_qp`'s crossover: tried once the mean complementarity is below CROSSOVER_MU times the bound
#: and at most CROSSOVER_FREE of the rows look free, on at most CROSSOVER_TRIES iterations.
CROSSOVER_MU = 1e-2
CROSSOVER_FREE = 0.25
CROSSOVER_TRIES = 3


def box_qp(Q: np.ndarray, c: np.ndarray, upper: float, tol: float = 1e-9, max_iter: int = 200,
           gap_tol: float | None = None, gap_rel: float = 0.0, offset: float = 0.0,
           crossover: Callable[[np.ndarray], np.ndarray | None] | None = None) -> SolverResult:
    """argmin 0.5 a'Qa + c'a s.t. 0 <= a <= upper (Q positive semidefinite, k x k).

    Mehrotra's predictor-corrector interior-point method; each iteration factors
    Q + diag(z_l / a + z_u / (upper - a)). For the MOM working set Q a + c = margins - 1, so
    the multipliers z live on the margin scale (1): the tolerances are absolute there. Stops
    when the residual of Q a + c - z_l + z_u is below tol and the mean complementarity
    below tol * upper, or (gap_tol set) when the certificate `box_gap` of the iterate is
    below gap_tol: on badly scaled Q (kernel features, tiny lam) the residual may never reach
    tol through round-off, while the gap, which bounds the objective's error, does. With
    gap_rel, a gap below gap_rel * |f(a) + offset| also stops it: for the dual of a hinge QP,
    -(f(a) + offset) is the hinge QP's dual value, so the stop is relative to its objective.
    A gap that stalls above these stops (a round-off floor: STALL_ITERATIONS) ends the
    iterations as a breakdown does: with the last point converged in its residuals, else
    `BoxQPStalled` with the last iterate.

    crossover: called with the iterate's guess of the active sets (-1 lower, +1 upper, 0 free:
    the larger of each row's bound gap and multiplier decides) once the iterations are close
    (`CROSSOVER_MU`, `CROSSOVER_FREE`); it returns the exact optimum, certified by the caller,
    or None, and the iterations go on. MOM's large working sets end with a few free rows among
    hundreds or thousands at a bound: their sets are clear iterations before the stop.

    Returns a `SolverResult` with solution a; path "interior_point" or "crossover"; status
    "optimal", or "optimal_inaccurate" for the last point converged in its residuals up to
    1e3 tol; certificate the residual and mean complementarity, or the duality gap when
    that stopped it (a crossover's point is certified by its caller).
    """
    k = c.size
    a = np.full(k, 0.5 * upper)
    z_low = np.ones(k)
    z_up = np.ones(k)
    fallback = None
    first_gap, best_gap, since_best = None, np.inf, 0
    crossovers = 0
    for iteration in range(max_iter):
        gap_up = upper - a
        gradient = Q @ a + c
        residual = gradient - z_low + z_up
        # The complementarity products and the reciprocals of the bound gaps, once per iteration:
        # the stops, the barrier and both directions share them (the iterations on the
        # polynomial grids' box QPs of 100-300 rows spend a third of their time outside LAPACK).
        comp_low, comp_up = a * z_low, gap_up * z_up
        mu = (comp_low.sum() + comp_up.sum()) / (2 * k)
        largest = np.abs(residual).max()
        if (largest <= tol and mu <= tol * upper) or (largest <= 1e3 * tol and mu <= 1e-6 * tol * upper):
            # converged, or at the round-off floor of a badly scaled Q (kernels, tiny lam)
            return SolverResult(a, iterations=iteration, path="interior_point",
                                certificate=dict(residual=float(largest), complementarity=float(mu)))
        if crossover is not None and crossovers < CROSSOVER_TRIES and mu <= CROSSOVER_MU * upper:
            status = np.where(a < upper * z_low, -1, np.where(gap_up < upper * z_up, 1, 0))
            if np.count_nonzero(status == 0) <= CROSSOVER_FREE * k:
                crossovers += 1
                found = crossover(status)
                if found is not None:
                    return SolverResult(found, iterations=iteration, path="crossover")
        if gap_tol is not None:
            gap = box_gap_of_gradient(gradient, upper, a)
            if gap <= max(gap_tol, gap_rel * abs(0.5 * a @ (gradient + c) + offset)):
                return SolverResult(a, iterations=iteration, path="interior_point", certificate=dict(duality_gap=gap))
            # At tiny lam the gap meets a round-off floor above its stop (about 1e-7 against
            # 1e-12 on RBF kernel cells at scaled lam 1e-14) and stays there: 100-150 more
            # iterations before a breakdown ended them (a tenth of a narrow RBF grid's time).
            # The iterations end as they would at that breakdown once the gap, down by six
            # orders of magnitude, has not halved its best for STALL_ITERATIONS iterations.
            first_gap = gap if first_gap is None else first_gap
            best_gap, since_best = (gap, 0) if gap < 0.5 * best_gap else (best_gap, since_best + 1)
            if since_best >= STALL_ITERATIONS and best_gap <= 1e-6 * first_gap:
                break
        if largest <= 1e3 * tol and mu <= tol * upper:
            # Converged up to a residual that round-off in Q a may not let fall below tol
            # (Q entries of 1e9 on separable kernel problems): kept in case the next step
            # breaks down on the bounds.
            fallback = SolverResult(a, iterations=iteration, status="optimal_inaccurate", path="interior_point",
                                    certificate=dict(residual=float(largest), complementarity=float(mu)))
        if not (np.isfinite(a).all() and gap_up.min() > 0 and a.min() > 0):
            break  # round-off pushed an iterate onto the bounds: give up, Clarabel takes over
        # A bound gap of 1e-310 (a free row of a crossover's small box QP that ends on a bound)
        # overflows its reciprocal: the barrier is then not finite and the iterations end below.
        with np.errstate(invalid="ignore", over="ignore"):
            inv_a, inv_up = 1.0 / a, 1.0 / gap_up
            barrier = z_low * inv_a + z_up * inv_up
        if not np.isfinite(barrier).all():
            break
        system = Q.copy()
        system.ravel()[:: k + 1] += barrier  # the diagonal of the copy, as a strided view
        try:
            factor = cho_factor_symmetric(system, overwrite=True)
        except np.linalg.LinAlgError:
            break

        def direction(shift_low, shift_up):
            # shift_low = target - a z_low - corrector (and the same on the upper bounds)
            d_a = cho_solve_factor(factor, shift_low * inv_a - shift_up * inv_up - residual)
            return d_a, (shift_low - z_low * d_a) * inv_a, (shift_up + z_up * d_a) * inv_up

        values = np.concatenate([a, gap_up, z_low, z_up])  # the fraction-to-boundary rule's
        d_a, d_low, d_up = direction(-comp_low, -comp_up)
        t = step_to_boundary(values, np.concatenate([d_a, -d_a, d_low, d_up]))
        mu_affine = ((a + t * d_a) @ (z_low + t * d_low) + (gap_up - t * d_a) @ (z_up + t * d_up)) / (2 * k)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            sigma = (mu_affine / mu) ** 3
        if not np.isfinite(sigma):
            break  # mu of 0 or inf at the round-off floor: the same end as a failed factorization
        target = sigma * mu
        d_a, d_low, d_up = direction(target - comp_low - d_a * d_low, target - comp_up + d_a * d_up)
        t = 0.99 * step_to_boundary(values, np.concatenate([d_a, -d_a, d_low, d_up]))
        a, z_low, z_up = a + t * d_a, z_low + t * d_low, z_up + t * d_up
    if fallback is not None:
        return fallback
    raise BoxQPStalled("the box-constrained QP of the working set did not converge", np.clip(a, 0.0, upper))


def hinge_qp_ipm(H: np.ndarray, g: np.ndarray, lam: float, weight: float, gap_tol: float = 1e-11,
                  max_iter: int = 100) -> SolverResult:
    """argmin_w (lam/2)||w||^2 - g'w + weight * sum_i max(0, 1 - h_i'w) for dense rows H (k x p).

    Mehrotra's predictor-corrector method on  H w + s - 1 = t >= 0 (multipliers alpha),
    s >= 0 (multipliers nu = weight - alpha). Every step solves (lam I + H' E^-1 H) dw = r
    with a diagonal E: a p x p system, O(k p^2). It stops on a certificate, not on
    residuals: the duality gap P(w) - D(alpha) of the iterate, with
    P(w) = (lam/2)||w||^2 - g'w + weight sum max(0, 1 - Hw) and
    D(alpha) = sum(alpha) - ||g + H'alpha||^2 / (2 lam) for 0 <= alpha <= weight (a lower
    bound on the optimum by weak duality), is below gap_tol * max(1, |P(w)|).
    Returns a `SolverResult` (solution w, objective P(w), certificate its duality gap).
    """
    k, p = H.shape
    w = np.zeros(p)
    s = np.full(k, 2.0)
    t = H @ w + s - 1.0  # = 1: the constraint holds exactly and stays so along Newton steps
    alpha = np.full(k, 0.5 * weight)
    nu = weight - alpha

    for iteration in range(max_iter):
        # H w and H' alpha once: the certificate and the residuals share them.
        margins, pull = H @ w, g + H.T @ alpha
        upper_bound = 0.5 * lam * w @ w - g @ w + weight * np.maximum(0.0, 1.0 - margins).sum()
        lower_bound = alpha.sum() - pull @ pull / (2.0 * lam)
        if upper_bound - lower_bound <= gap_tol * max(1.0, abs(upper_bound)):
            return SolverResult(w, objective=float(upper_bound), iterations=iteration, path="interior_point",
                                certificate=dict(duality_gap=float(upper_bound - lower_bound)))
        r_w = lam * w - pull
        r_t = margins + s - 1.0 - t
        r_nu = weight - alpha - nu
        mu = (t @ alpha + s @ nu) / (2 * k)
        e = s / nu + t / alpha
        if not (np.isfinite(e).all() and e.min() > 0):
            break
        scaled = H / np.sqrt(e)[:, None]
        try:
            factor = cho_factor_gram(scaled, lam)  # H' E^-1 H + lam I
        except np.linalg.LinAlgError:
            try:  # the Gram matrix lost definiteness to round-off (tiny lam): factor the rows
                factor = qr_factor_gram(scaled, lam)
            except np.linalg.LinAlgError:
                break

        def direction(target, corr_t, corr_s):
            rc_t = target - t * alpha - corr_t
            rc_s = target - s * nu - corr_s
            rho = -r_t - (rc_s - s * r_nu) / nu + rc_t / alpha
            d_w = cho_solve_factor(factor, -r_w + H.T @ (rho / e))
            d_alpha = (rho - H @ d_w) / e
            d_nu = r_nu - d_alpha
            return d_w, d_alpha, d_nu, (rc_t - t * d_alpha) / alpha, (rc_s - s * d_nu) / nu

        d_w, d_alpha, d_nu, d_t, d_s = direction(0.0, 0.0, 0.0)
        step = longest_step((alpha, d_alpha), (nu, d_nu), (t, d_t), (s, d_s))
        mu_affine = ((t + step * d_t) @ (alpha + step * d_alpha) + (s + step * d_s) @ (nu + step * d_nu)) / (2 * k)
        sigma = (mu_affine / mu) ** 3
        d_w, d_alpha, d_nu, d_t, d_s = direction(sigma * mu, d_t * d_alpha, d_s * d_nu)
        step = 0.99 * longest_step((alpha, d_alpha), (nu, d_nu), (t, d_t), (s, d_s))
        w, alpha, nu = w + step * d_w, alpha + step * d_alpha, nu + step * d_nu
        t, s = t + step * d_t, s + step * d_s
    raise HingeIPMStalled("the interior-point method of the restricted MOM problem did not converge", w, alpha)
