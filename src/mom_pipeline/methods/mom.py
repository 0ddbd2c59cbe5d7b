"""Maximum Optimality Margin (MOM), offline: learn c_hat = Theta z from observed optimal solutions.

The training problem (paper, problem (prob:svm)) with T samples, M_t the reduced-cost
operator of the observed optimal basis of sample t (r_N = M_t c, see
`lp.reduced_cost_operator`):

    min_Theta  (lam/2) ||Theta||_F^2 + (1/T) sum_t ||s_t||_1
    s.t.       M_t Theta z_t >= 1 - s_t,  s_t >= 0,  (optionally ||Theta||_F <= radius).

Flattening Theta row-major into w = vec(Theta) (length n*d), row k of M_t Theta z_t is
h_tk' w with h_tk = kron(M_t[k], z_t) (`hinge_rows`), so MOM is an L2-regularized hinge
loss over the rows h_tk without intercept: a linear SVM whose labels are all +1.

Solvers:
* "cvxpy": the reference, one vectorized matrix constraint H w >= 1 - s through Clarabel.
* "fast": exact, in three steps (`solve_hinge_qp`).
  1. Warm start: the hinge smoothed to a Huber loss of width mu, minimized by Newton's
     method with exact line search for mu = 0.1 then 0.01 (the Hessian involves only the
     rows in the smoothed piece, updated as rows enter and leave it). At large lam the
     closed form with every row violated is tried first (it is the optimum when it
     violates every row).
  2. Active-set finish: the optimality conditions with the smoothed rows guessed as the
     margin rows are a small linear system; rows whose multiplier or margin contradicts
     the guess move, and when none does the point is optimal. It gives up (and step 3
     runs) when the margin rows are linearly dependent, which happens often on these LPs
     (hundreds of rows on the margin in a space of rank below 100).
  3. Working set: rows clearly violated at the start enter a QP as a constant gradient
     (their hinge is linear there), rows clearly satisfied are dropped, the rest are hinge
     constraints; the restricted QP is solved; rows that break their assumption join the
     working set. The restricted problem lower-bounds the full one, so when no row breaks
     its assumption (up to `tol` on the margins) the restricted optimum is the optimum.
     The restricted QP goes to whichever solver suits its shape, Clarabel the fallback:
     up to n*d = 1000 unknowns and at least half as many working rows, a primal-dual
     interior-point method with p x p steps (`_hinge_qp_ipm`, stopped by a duality-gap
     certificate); with many features (kernels: n*d > 2000) and fewer working rows, its
     dual, a box QP over the working rows with their k x k Gram matrix (`_box_qp`);
     otherwise Clarabel.
  With the ball ||Theta||_F <= radius only step 3 runs (Clarabel takes the cone).

formulation="dual" (beyond the paper) drops the basis: free dual variables y_t (m per
sample) with reduced costs c_hat_t - A_t' y_t equal to 0 on the support of x*_t and
>= 1 - s_t elsewhere (`solve_dual_formulation`). When x*_t is non-degenerate (support =
basis) it is the basis formulation; on degenerate LPs (shortest path) it does not have to
pick a basis.
"""

from __future__ import annotations

import time
import warnings
from typing import ClassVar

import clarabel
import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg
import threadpoolctl

from ..lp import BasisError, StandardFormLP, basis_matrices, reduced_cost_operator
from .base import LinearCostModel, check_features, check_samples, resolve_lp

SOLVERS = ("fast", "cvxpy")
FORMULATIONS = ("basis", "dual")
# x_j counts as positive (in the support) above this times max(1, |x|_inf).
SUPPORT_TOL = 1e-9


# --------------------------------------------------------------------------- helpers


def hinge_rows(M, Z, sparse: bool = False):
    """The hinge-row matrix H with rows h_tk = kron(M_t[k], z_t): M_t Theta z_t = H_t vec(Theta).

    vec(Theta) flattens Theta (n, d) row-major, so h_tk[j*d + l] = M_t[k, j] * z_t[l].

    Args:
        M: (T, K, n) reduced-cost operators (K = n - m rows per sample); Z: (T, d).
        sparse: return a scipy CSR matrix (only the nonzeros of M are expanded).
    Returns:
        (T*K, n*d) array (or CSR matrix); rows ordered sample by sample.
    """
    M = np.asarray(M, dtype=float)
    Z = np.asarray(Z, dtype=float)
    T, K, n = M.shape
    d = Z.shape[1]
    if Z.shape[0] != T:
        raise ValueError(f"M has {T} samples but Z has {Z.shape[0]}")
    if not sparse:
        return np.einsum("tkn,td->tknd", M, Z).reshape(T * K, n * d)
    t, k, j = np.nonzero(M)
    values = (M[t, k, j][:, None] * Z[t]).ravel()
    rows = np.repeat(t * K + k, d)
    cols = (j[:, None] * d + np.arange(d)).ravel()
    return sp.csr_matrix((values, (rows, cols)), shape=(T * K, n * d))


def optimality_margins(Theta, M, Z) -> np.ndarray:
    """Reduced costs of the predicted costs, M_t Theta z_t, for every sample: (T, K)."""
    costs = np.asarray(Z, dtype=float) @ np.asarray(Theta, dtype=float).T
    return (np.asarray(M) @ costs[:, :, None])[..., 0]  # batched matmul: faster than einsum here


def mom_hinge_loss(Theta, M, Z) -> np.ndarray:
    """Per-sample MOM loss ||s_t||_1 = sum_k max(0, 1 - (M_t Theta z_t)_k): (T,)."""
    return np.maximum(0.0, 1.0 - optimality_margins(Theta, M, Z)).sum(axis=1)


def mom_objective(Theta, M, Z, lam: float) -> float:
    """(lam/2) ||Theta||_F^2 + (1/T) sum_t ||s_t||_1 at the optimal slacks."""
    Theta = np.asarray(Theta, dtype=float)
    return float(0.5 * lam * np.sum(Theta**2) + mom_hinge_loss(Theta, M, Z).mean())


def _check_hyperparameters(lam, radius, tol) -> None:
    if not np.isfinite(lam) or lam <= 0:
        raise ValueError(f"lam must be a positive finite number; got {lam}")
    if radius is not None and (not np.isfinite(radius) or radius <= 0):
        raise ValueError(f"radius must be None or a positive finite number; got {radius}")
    if not tol > 0:
        raise ValueError(f"tol must be positive; got {tol}")


def _clarabel_settings(max_iter: int = 200) -> clarabel.DefaultSettings:
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.max_iter = max_iter
    settings.max_threads = 1  # deterministic results (and no spinning threads on a busy machine)
    return settings


def _solve_clarabel(P, q, A, b, cones, what: str) -> np.ndarray:
    """min 0.5 x'Px + q'x s.t. b - Ax in cones; raises when Clarabel does not solve it.

    A run that stalls (InsufficientProgress, an ill-conditioned KKT system) is retried
    without equilibration and then with more iterations before giving up.
    """
    P, A = sp.triu(P, format="csc"), sp.csc_matrix(A)
    status = "not run"
    for attempt in range(3):
        settings = _clarabel_settings(200 if attempt < 2 else 1000)
        if attempt >= 1:
            settings.equilibrate_enable = False
        solution = clarabel.DefaultSolver(P, q, A, b, cones, settings).solve()
        status = str(solution.status)
        if status in ("Solved", "AlmostSolved"):
            return np.asarray(solution.x)
    raise RuntimeError(f"Clarabel did not solve the {what} (status {status})")


def _ball_block(n_vars: int, first: int, size: int, radius: float):
    """Rows and rhs of the cone constraint ||x[first:first+size]||_2 <= radius."""
    block = sp.hstack(
        [sp.csr_matrix((size, first)), -sp.identity(size, format="csr"),
         sp.csr_matrix((size, n_vars - first - size))], format="csr")
    A = sp.vstack([sp.csr_matrix((1, n_vars)), block], format="csr")
    b = np.concatenate([[radius], np.zeros(size)])
    return A, b, clarabel.SecondOrderConeT(size + 1)


# --------------------------------------------------------------------------- fast solver


class _HingeRows:
    """The rows h_tk of one MOM problem with products computed from M and Z (H is never formed)."""

    def __init__(self, M: np.ndarray, Z: np.ndarray):
        self.M, self.Z = M, Z
        self.T, self.K, self.n = M.shape
        self.d = Z.shape[1]
        self._feature_gram = None

    def margins(self, w: np.ndarray) -> np.ndarray:
        """H w, (T*K,)."""
        return optimality_margins(w.reshape(self.n, self.d), self.M, self.Z).ravel()

    def weighted_sum(self, alpha: np.ndarray) -> np.ndarray:
        """H' alpha, (n*d,)."""
        per_cost = (alpha.reshape(self.T, 1, self.K) @ self.M)[:, 0, :]
        return (per_cost.T @ self.Z).ravel()

    def gram(self, index: np.ndarray) -> np.ndarray:
        """H[index] H[index]' = (M_i . M_j)(z_i . z_j): (len(index), len(index)), without forming H."""
        t, k = np.divmod(index, self.K)
        M_rows = self.M[t, k]
        if self.d <= self.n:
            return (M_rows @ M_rows.T) * (self.Z[t] @ self.Z[t].T)
        if self._feature_gram is None:  # many features (kernels): the T x T Gram matrix once
            self._feature_gram = self.Z @ self.Z.T
        return (M_rows @ M_rows.T) * self._feature_gram[np.ix_(t, t)]

    def margins_of(self, index: np.ndarray, w: np.ndarray) -> np.ndarray:
        """H[index] w, (len(index),)."""
        t, k = np.divmod(index, self.K)
        costs = self.Z[t] @ w.reshape(self.n, self.d).T
        return np.einsum("in,in->i", self.M[t, k], costs)

    def weighted_sum_of(self, index: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """H[index]' beta, (n*d,)."""
        alpha = np.zeros(self.T * self.K)
        np.add.at(alpha, index, beta)
        return self.weighted_sum(alpha)

    def dense_rows(self, index: np.ndarray) -> np.ndarray:
        """The rows `index` of H, dense (len(index), n*d)."""
        t, k = np.divmod(index, self.K)
        return np.einsum("in,id->ind", self.M[t, k], self.Z[t]).reshape(index.size, self.n * self.d)

    def rows(self, index: np.ndarray) -> sp.csr_matrix:
        """The rows `index` of H as a sparse matrix."""
        t, k = np.divmod(index, self.K)
        return hinge_rows(self.M[t, k][:, None, :], self.Z[t], sparse=True)


def _restricted_qp(rows: _HingeRows, lam: float, weight: float, working: np.ndarray, linear: np.ndarray,
                   radius: float | None) -> np.ndarray:
    """argmin_w (lam/2)||w||^2 - weight * sum_{linear} h'w + weight * sum_{working} max(0, 1 - h'w)
    (within the ball when radius is set): the MOM problem with the rows in `linear` assumed
    violated and the rows outside both sets assumed satisfied."""
    p = rows.n * rows.d
    gradient = weight * rows.weighted_sum(linear.astype(float))
    if not working.any():
        # Closed form: the unconstrained minimizer, projected onto the ball.
        w = gradient / lam
        norm = np.linalg.norm(w)
        if radius is not None and norm > radius:
            w *= radius / norm
        return w
    index = np.flatnonzero(working)
    k = index.size
    if radius is None and 2 * k > p and p <= 1000:
        # Many rows, few features (linear MOM at small lam): an interior-point method whose
        # steps solve p x p systems, O(k p^2) each (Clarabel factors the (p + 2k)-sized KKT
        # system with its dense k x p block). Clarabel remains the fallback.
        try:
            return _hinge_qp_ipm(rows.dense_rows(index), gradient, lam, weight)
        except RuntimeError:
            pass
    if radius is None and p > max(2000, 2 * k):
        # Many features (kernels), fewer rows: the dual, a box QP over the working rows with
        # the k x k Gram matrix, is far smaller than the primal for Clarabel (its KKT
        # system fills a dense p x p block). Clarabel remains the fallback.
        try:
            alpha = _box_qp(rows.gram(index) / lam, rows.margins_of(index, gradient) / lam - 1.0, weight)
            return (gradient + rows.weighted_sum_of(index, alpha)) / lam
        except RuntimeError:
            pass
    n_vars = p + k
    H_w = rows.rows(index)
    identity = sp.identity(k, format="csr")
    # h'w + s >= 1  and  s >= 0, written as b - A x >= 0.
    A = sp.vstack([sp.hstack([-H_w, -identity]), sp.hstack([sp.csr_matrix((k, p)), -identity])], format="csr")
    b = np.concatenate([-np.ones(k), np.zeros(k)])
    cones = [clarabel.NonnegativeConeT(2 * k)]
    if radius is not None:
        A_ball, b_ball, cone = _ball_block(n_vars, 0, p, radius)
        A, b, cones = sp.vstack([A, A_ball], format="csr"), np.concatenate([b, b_ball]), cones + [cone]
    P = sp.diags(np.concatenate([np.full(p, lam), np.zeros(k)]), format="csc")
    q = np.concatenate([-gradient, np.full(k, weight)])
    return _solve_clarabel(P, q, A, b, cones, "restricted MOM QP")[:p]


def _longest_step(*pairs) -> float:
    """The largest t <= 1 keeping every value + t * change >= 0 (pairs of positive arrays and
    their directions): the fraction-to-boundary rule of the interior-point methods below."""
    ratios = [1.0]
    for value, change in pairs:
        shrinking = change < 0
        if shrinking.any():
            ratios.append(float(np.min(-value[shrinking] / change[shrinking])))
    return min(ratios)


def _box_qp(Q: np.ndarray, c: np.ndarray, upper: float, tol: float = 1e-9, max_iter: int = 200) -> np.ndarray:
    """argmin 0.5 a'Qa + c'a s.t. 0 <= a <= upper (Q positive semidefinite, k x k).

    Mehrotra's predictor-corrector interior-point method; each iteration factors
    Q + diag(z_l / a + z_u / (upper - a)). For the MOM working set Q a + c = margins - 1, so
    the multipliers z live on the margin scale (1): the tolerances are absolute there. Stops
    when the residual of Q a + c - z_l + z_u is below tol and the mean complementarity
    below tol * upper.
    """
    k = c.size
    a = np.full(k, 0.5 * upper)
    z_low = np.ones(k)
    z_up = np.ones(k)
    fallback = None
    for _ in range(max_iter):
        gap_up = upper - a
        residual = Q @ a + c - z_low + z_up
        mu = (a @ z_low + gap_up @ z_up) / (2 * k)
        largest = np.abs(residual).max()
        if (largest <= tol and mu <= tol * upper) or (largest <= 1e3 * tol and mu <= 1e-6 * tol * upper):
            return a  # converged, or at the round-off floor of a badly scaled Q (kernels, tiny lam)
        if largest <= 1e3 * tol and mu <= tol * upper:
            # Converged up to a residual that round-off in Q a may not let fall below tol
            # (Q entries of 1e9 on separable kernel problems): kept in case the next step
            # breaks down on the bounds.
            fallback = a
        with np.errstate(divide="ignore", invalid="ignore"):
            system = Q + np.diag(z_low / a + z_up / gap_up)
        if not np.isfinite(system).all():
            break
        try:
            factor = scipy.linalg.cho_factor(system)
        except np.linalg.LinAlgError:
            break

        def direction(target, corr_low, corr_up):
            rhs = -residual + (target - a * z_low - corr_low) / a - (target - gap_up * z_up - corr_up) / gap_up
            d_a = scipy.linalg.cho_solve(factor, rhs)
            d_low = (target - a * z_low - corr_low - z_low * d_a) / a
            d_up = (target - gap_up * z_up - corr_up + z_up * d_a) / gap_up
            return d_a, d_low, d_up

        if not (np.isfinite(a).all() and gap_up.min() > 0 and a.min() > 0):
            break  # round-off pushed an iterate onto the bounds: give up, Clarabel takes over
        d_a, d_low, d_up = direction(0.0, 0.0, 0.0)
        t = _longest_step((a, d_a), (gap_up, -d_a), (z_low, d_low), (z_up, d_up))
        mu_affine = ((a + t * d_a) @ (z_low + t * d_low) + (gap_up - t * d_a) @ (z_up + t * d_up)) / (2 * k)
        sigma = (mu_affine / mu) ** 3
        d_a, d_low, d_up = direction(sigma * mu, d_a * d_low, -d_a * d_up)
        t = 0.99 * _longest_step((a, d_a), (gap_up, -d_a), (z_low, d_low), (z_up, d_up))
        a, z_low, z_up = a + t * d_a, z_low + t * d_low, z_up + t * d_up
    if fallback is not None:
        return fallback
    raise RuntimeError("the box-constrained QP of the working set did not converge")


def _hinge_qp_ipm(H: np.ndarray, g: np.ndarray, lam: float, weight: float, gap_tol: float = 1e-11,
                  max_iter: int = 100) -> np.ndarray:
    """argmin_w (lam/2)||w||^2 - g'w + weight * sum_i max(0, 1 - h_i'w) for dense rows H (k x p).

    Mehrotra's predictor-corrector method on  H w + s - 1 = t >= 0 (multipliers alpha),
    s >= 0 (multipliers nu = weight - alpha). Every step solves (lam I + H' E^-1 H) dw = r
    with a diagonal E: a p x p system, O(k p^2). It stops on a certificate, not on
    residuals: the duality gap P(w) - D(alpha) of the iterate, with
    P(w) = (lam/2)||w||^2 - g'w + weight sum max(0, 1 - Hw) and
    D(alpha) = sum(alpha) - ||g + H'alpha||^2 / (2 lam) for 0 <= alpha <= weight (a lower
    bound on the optimum by weak duality), is below gap_tol * max(1, |P(w)|).
    """
    k, p = H.shape
    w = np.zeros(p)
    s = np.full(k, 2.0)
    t = H @ w + s - 1.0  # = 1: the constraint holds exactly and stays so along Newton steps
    alpha = np.full(k, 0.5 * weight)
    nu = weight - alpha

    def primal(w):
        return 0.5 * lam * w @ w - g @ w + weight * np.maximum(0.0, 1.0 - H @ w).sum()

    def dual(alpha):
        pull = g + H.T @ alpha
        return alpha.sum() - pull @ pull / (2.0 * lam)

    for _ in range(max_iter):
        upper_bound = primal(w)
        if upper_bound - dual(alpha) <= gap_tol * max(1.0, abs(upper_bound)):
            return w
        r_w = lam * w - g - H.T @ alpha
        r_t = H @ w + s - 1.0 - t
        r_nu = weight - alpha - nu
        mu = (t @ alpha + s @ nu) / (2 * k)
        e = s / nu + t / alpha
        if not (np.isfinite(e).all() and e.min() > 0):
            break
        system = (H.T * (1.0 / e)) @ H
        system[np.diag_indices(p)] += lam
        try:
            factor = scipy.linalg.cho_factor(system)
        except np.linalg.LinAlgError:
            break

        def direction(target, corr_t, corr_s):
            rc_t = target - t * alpha - corr_t
            rc_s = target - s * nu - corr_s
            rho = -r_t - (rc_s - s * r_nu) / nu + rc_t / alpha
            d_w = scipy.linalg.cho_solve(factor, -r_w + H.T @ (rho / e))
            d_alpha = (rho - H @ d_w) / e
            d_nu = r_nu - d_alpha
            return d_w, d_alpha, d_nu, (rc_t - t * d_alpha) / alpha, (rc_s - s * d_nu) / nu

        d_w, d_alpha, d_nu, d_t, d_s = direction(0.0, 0.0, 0.0)
        step = _longest_step((alpha, d_alpha), (nu, d_nu), (t, d_t), (s, d_s))
        mu_affine = ((t + step * d_t) @ (alpha + step * d_alpha) + (s + step * d_s) @ (nu + step * d_nu)) / (2 * k)
        sigma = (mu_affine / mu) ** 3
        d_w, d_alpha, d_nu, d_t, d_s = direction(sigma * mu, d_t * d_alpha, d_s * d_nu)
        step = 0.99 * _longest_step((alpha, d_alpha), (nu, d_nu), (t, d_t), (s, d_s))
        w, alpha, nu = w + step * d_w, alpha + step * d_alpha, nu + step * d_nu
        t, s = t + step * d_t, s + step * d_s
    raise RuntimeError("the interior-point method of the restricted MOM problem did not converge")


def _solve_positive(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """matrix^{-1} rhs for a symmetric positive definite matrix that may be ill-conditioned
    (a Newton direction of the warm start: accuracy matters little, robustness does)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
        try:
            return scipy.linalg.cho_solve(scipy.linalg.cho_factor(matrix), rhs)
        except np.linalg.LinAlgError:
            return np.linalg.lstsq(matrix, rhs, rcond=None)[0]


def _huber_loss(v: np.ndarray, mu: float) -> np.ndarray:
    """The hinge max(0, v) smoothed on [0, mu]: v^2/(2 mu) there, v - mu/2 beyond."""
    return np.where(v >= mu, v - 0.5 * mu, np.where(v > 0, 0.5 * v * v / mu, 0.0))


def _exact_line_search(w, direction, v, a, lam: float, weight: float, mu: float) -> float:
    """argmin_t of the smoothed objective along w + t*direction (v = 1 - margins, a = H direction).

    The derivative in t is piecewise linear and increasing: safeguarded Newton on it,
    bracketed, stops at its root (finitely many pieces, so it ends exactly up to roundoff).
    """
    wd, dd = w @ direction, direction @ direction

    def derivative(t):
        x = v - t * a
        curved = (x > 0) & (x < mu)
        first = lam * (wd + t * dd) - weight * (a @ np.clip(x / mu, 0.0, 1.0))
        return first, lam * dd + (weight / mu) * (a[curved] @ a[curved])

    low, high = 0.0, 1.0
    while derivative(high)[0] < 0:
        low, high = high, 2.0 * high
        if high > 1e12:
            return high
    t = 1.0
    for _ in range(60):
        first, second = derivative(t)
        if abs(first) <= 1e-13 * max(1.0, lam * abs(wd)) :
            return t
        if first < 0:
            low = t
        else:
            high = t
        t_new = t - first / second if second > 0 else 0.5 * (low + high)
        if not low < t_new < high:
            t_new = 0.5 * (low + high)
        if abs(t_new - t) <= 1e-14 * max(1.0, t):
            return t_new
        t = t_new
    return t


def _smoothed_hinge_start(rows: _HingeRows, lam: float, weight: float, mu_final: float = 1e-2,
                          max_steps: int = 30, level_tol: float = 1e-4, shrink: float = 0.1,
                          mu_start: float = 0.1) -> tuple[np.ndarray, int]:
    """Warm start: minimize the MOM objective with the hinge smoothed (Huber, width mu) by
    Newton's method with exact line search, for mu = 0.1, 0.01, ..., mu_final, each level from
    the previous solution.

    The smoothed loss is piecewise quadratic: curvature 1/mu only on rows whose margin is
    within mu below 1, so the Hessian lam I + (weight/mu) H_Q'H_Q involves those rows only.
    The working-set solve that follows is exact, so the levels need not be solved to the end:
    a level stops when a step changes the objective by less than a relative 1e-9.
    Returns w (n*d,) and the number of Newton steps.
    """
    p = rows.n * rows.d
    w = np.zeros(p)
    steps = 0
    direct = p <= 2000  # a dense p x p Hessian up to here; beyond (kernel features) Woodbury or CG
    mu = mu_start
    gram, gram_rows = np.zeros((p, p)), np.zeros(rows.T * rows.K, dtype=bool)
    while True:
        final = mu <= mu_final * (1 + 1e-9)  # 0.1 * 0.1 is 0.010000000000000002
        v = 1.0 - rows.margins(w)
        f = 0.5 * lam * w @ w + weight * _huber_loss(v, mu).sum()
        for _ in range(max_steps):
            steps += 1
            gradient = lam * w - weight * rows.weighted_sum(np.clip(v / mu, 0.0, 1.0))
            curved_mask = (v > 0) & (v < mu)
            curved = np.flatnonzero(curved_mask)
            # Woodbury whenever the curved rows are clearly fewer than the variables: a
            # |Q| x |Q| factorization instead of p x p (kernel features: p = n * rank).
            woodbury = curved.size <= 3000 and (not direct or (p > 500 and 2 * curved.size < p))
            if direct and not woodbury:
                # Gram matrix of the curved rows, updated by the rows that enter or leave the
                # curved piece when that is cheaper than rebuilding it.
                entering = np.flatnonzero(curved_mask & ~gram_rows)
                leaving = np.flatnonzero(gram_rows & ~curved_mask)
                if entering.size + leaving.size < curved.size:
                    H_in, H_out = rows.dense_rows(entering), rows.dense_rows(leaving)
                    gram += H_in.T @ H_in - H_out.T @ H_out
                else:
                    H_q = rows.dense_rows(curved)
                    gram = H_q.T @ H_q
                gram_rows = curved_mask
                hessian = (weight / mu) * gram
                hessian[np.diag_indices(p)] += lam
                direction = -_solve_positive(hessian, gradient)
            elif woodbury:
                # Many features (kernels): Woodbury, a |Q| x |Q| system whose matrix
                # H_Q H_Q' = (M_Q M_Q') * (Z_Q Z_Q') comes from the Gram matrix of the features.
                small = rows.gram(curved)
                small[np.diag_indices(curved.size)] += lam * mu / weight
                beta = _solve_positive(small, rows.margins_of(curved, gradient))
                direction = -(gradient - rows.weighted_sum_of(curved, beta)) / lam
            else:
                H_q = rows.rows(curved)
                operator = scipy.sparse.linalg.LinearOperator(
                    (p, p), matvec=lambda x, H_q=H_q: lam * x + (weight / mu) * (H_q.T @ (H_q @ x)))
                direction = -scipy.sparse.linalg.cg(operator, gradient, rtol=1e-6, maxiter=100)[0]
            a = rows.margins(direction)
            step = _exact_line_search(w, direction, v, a, lam, weight, mu)
            w = w + step * direction
            v = v - step * a
            f_new = 0.5 * lam * w @ w + weight * _huber_loss(v, mu).sum()
            decrease, f = f - f_new, f_new
            if decrease <= (1e-9 if final else level_tol) * abs(f):
                break
        if final:
            return w, steps
        mu = max(mu_final, shrink * mu)


def solve_hinge_qp(M, Z, lam: float, radius: float | None = None, tol: float = 1e-8, w0=None,
                   band: float = 1e-2, linear_below: float = 1e-2, max_rounds: int = 100) -> tuple[np.ndarray, dict]:
    """Exact MOM solution by the working-set method (see the module docstring).

    Args:
        M: (T, K, n) reduced-cost operators; Z: (T, d) features; lam > 0; radius: ball or None.
        tol: a row breaks its assumption when its margin is beyond 1 by more than tol.
        w0: (n*d,) warm start; None: the smoothed-hinge Newton start (`_smoothed_hinge_start`).
        band: rows whose warm-start margin is within band of 1 start in the working set;
            rows are assumed violated below 1 - band and satisfied above 1 + band.
    Returns:
        Theta (n, d) and an info dict (rounds, working-set size, Newton steps).
    """
    # Many small BLAS calls: one thread avoids spin-waiting threads on a busy machine.
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        return _solve_hinge_qp(np.asarray(M, dtype=float), np.asarray(Z, dtype=float), lam, radius, tol, w0,
                               band, linear_below, max_rounds)


def _solve_hinge_qp(M, Z, lam, radius, tol, w0, band, linear_below, max_rounds):
    # Rescale the rows to a largest norm of 1 (features Z / sigma, w * sigma, lam / sigma^2:
    # the same problem) so that kernel features of any magnitude stay well conditioned.
    sigma = float((np.linalg.norm(M, axis=2) * np.linalg.norm(Z, axis=1)[:, None]).max())
    if not sigma > 0:
        sigma = 1.0
    Theta, info = _solve_scaled(M, Z / sigma, lam / sigma**2, None if radius is None else radius * sigma, tol,
                                None if w0 is None else np.asarray(w0, dtype=float).ravel() * sigma,
                                band, linear_below, max_rounds)
    return Theta / sigma, info


def _solve_scaled(M, Z, lam, radius, tol, w0, band, linear_below, max_rounds):
    rows = _HingeRows(M, Z)
    weight = 1.0 / rows.T
    newton_steps = 0
    if w0 is None:
        w0 = _closed_form_start(rows, lam, weight, radius)
        if w0 is None:
            w0, newton_steps = _smoothed_hinge_start(rows, lam, weight)
            if radius is not None and np.linalg.norm(w0) > radius:
                w0 *= radius / np.linalg.norm(w0)
                band = max(band, 0.1)  # a cruder start: more rows near the margin
    u_start = rows.margins(np.asarray(w0, dtype=float).ravel())
    if radius is None and newton_steps:
        w, active_steps = _active_set_finish(rows, lam, weight, u_start, tol)
        if w is not None:
            info = dict(rounds=1, working_set=0, linear_rows=int((rows.margins(w) < 1.0).sum()), restricted_solves=0,
                        newton_steps=int(newton_steps), active_set_steps=active_steps, rows=int(rows.T * rows.K))
            return w.reshape(rows.n, rows.d), info
    # Rows far below the margin at the start are assumed violated (linear). With a weak
    # regularizer that assumption lets the restricted optimum jump far (its linear pull is
    # only held back by lam); a jump shows as many broken rows, and then fewer rows are
    # linearized: the threshold `linear_below` grows and the jump is discarded.
    working = (u_start >= 1.0 - linear_below) & (u_start <= 1.0 + band)
    linear = u_start < 1.0 - linear_below
    solves = 0
    for round_ in range(1, max_rounds + 1):
        w = _restricted_qp(rows, lam, weight, working, linear, radius)
        solves += working.any()
        u = rows.margins(w)
        broken = (linear & (u > 1.0 + tol)) | (~linear & ~working & (u < 1.0 - tol))
        if not broken.any():
            break
        if linear.any() and broken.sum() > max(100, working.sum()):
            linear_below *= 4.0
            working |= (u_start >= 1.0 - linear_below) & (u_start <= 1.0 + band)
            linear &= ~working
            continue
        # Rows near the margin join too: the next restricted optimum is likely to move them.
        joining = broken | (~working & (np.abs(u - 1.0) <= band))
        working |= joining
        linear &= ~joining
    else:
        raise RuntimeError(f"MOM working-set method did not terminate in {max_rounds} rounds")
    info = dict(rounds=round_, working_set=int(working.sum()), linear_rows=int(linear.sum()),
                restricted_solves=int(solves), newton_steps=int(newton_steps), rows=int(rows.T * rows.K))
    return w.reshape(rows.n, rows.d), info


def _active_set_finish(rows: _HingeRows, lam: float, weight: float, u: np.ndarray, tol: float,
                       mu: float = 1e-2, max_steps: int = 25):
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
    margin, violated = (v > 0) & (v < mu), v >= mu
    alpha_tol = 1e-9 * weight
    for step in range(1, max_steps + 1):
        gradient = weight * rows.weighted_sum(violated.astype(float))
        index = np.flatnonzero(margin)
        if index.size > rows.n * rows.d:
            return None, step  # more margin rows than dimensions: dependent, leave it to the QP
        alpha = np.zeros(0)
        if index.size:
            gram = rows.gram(index)
            rhs = lam - rows.margins_of(index, gradient)
            try:
                alpha = scipy.linalg.cho_solve(scipy.linalg.cho_factor(gram), rhs)
            except np.linalg.LinAlgError:
                return None, step
            if not np.allclose(gram @ alpha, rhs, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(rhs).max())):
                return None, step  # numerically singular: the margin rows are not independent
        w = (gradient + rows.weighted_sum_of(index, alpha)) / lam
        u = rows.margins(w)
        to_satisfied = np.zeros_like(margin)
        to_violated = np.zeros_like(margin)
        to_satisfied[index] = alpha < -alpha_tol
        to_violated[index] = alpha > weight + alpha_tol
        to_margin = (violated & (u > 1.0 + tol)) | (~violated & ~margin & (u < 1.0 - tol))
        if not (to_satisfied.any() or to_violated.any() or to_margin.any()):
            return w, step
        margin = (margin & ~to_satisfied & ~to_violated) | to_margin
        violated = (violated & ~to_margin) | to_violated
    return None, max_steps


def _closed_form_start(rows: _HingeRows, lam: float, weight: float, radius: float | None):
    """None, or the exact optimum when every row is violated there (large lam)."""
    everything = np.ones(rows.T * rows.K, dtype=bool)
    w = _restricted_qp(rows, lam, weight, ~everything, everything, radius)
    return w if np.all(rows.margins(w) < 1.0) else None


# --------------------------------------------------------------------------- cvxpy reference


def _solve_cvxpy(objective_and_constraints, what: str):
    """Solve a cvxpy problem with Clarabel; raise a clear error when it is not solved."""
    import cvxpy as cp  # imported here: only the reference path needs cvxpy

    objective, constraints = objective_and_constraints
    problem = cp.Problem(cp.Minimize(objective), constraints)
    problem.solve(solver=cp.CLARABEL)
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise RuntimeError(f"cvxpy/Clarabel did not solve the {what} (status {problem.status})")
    return problem


def solve_hinge_qp_cvxpy(M, Z, lam: float, radius: float | None = None) -> tuple[np.ndarray, dict]:
    """Reference MOM solution: cvxpy with ONE matrix constraint H w >= 1 - s for all samples.

    Args and returns as `solve_hinge_qp`.
    """
    import cvxpy as cp

    M = np.asarray(M, dtype=float)
    T, K, n = M.shape
    d = Z.shape[1]
    H = hinge_rows(M, Z, sparse=True)
    w = cp.Variable(n * d)
    s = cp.Variable(T * K, nonneg=True)
    constraints = [H @ w >= 1 - s]
    if radius is not None:
        constraints.append(cp.norm(w, 2) <= radius)
    problem = _solve_cvxpy((0.5 * lam * cp.sum_squares(w) + cp.sum(s) / T, constraints), "MOM QP")
    return np.asarray(w.value).reshape(n, d), dict(status=problem.status, solver_objective=float(problem.value))


def solve_mom(M, Z, lam: float, radius: float | None = None, solver: str = "fast",
              tol: float = 1e-8) -> tuple[np.ndarray, dict]:
    """The MOM coefficient Theta (n, d) for reduced-cost operators M (T, K, n) and features Z (T, d).

    The entry point for callers that already hold the operators (online FTRL re-solves).
    """
    _check_hyperparameters(lam, radius, tol)
    if solver == "fast":
        return solve_hinge_qp(M, Z, lam, radius=radius, tol=tol)
    if solver == "cvxpy":
        return solve_hinge_qp_cvxpy(M, Z, lam, radius=radius)
    raise ValueError(f"unknown solver {solver!r}; choose one of {SOLVERS}")


# --------------------------------------------------------------------------- dual formulation


def support_mask(X) -> np.ndarray:
    """(T, n) boolean: x_j > SUPPORT_TOL * max(1, |x|_inf) for each sample."""
    X = np.asarray(X, dtype=float)
    return X > SUPPORT_TOL * np.maximum(1.0, np.abs(X).max(axis=1, keepdims=True))


def solve_dual_formulation(A, basis, X, Z, lam: float, radius: float | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """MOM without a basis: Clarabel on the whole problem, built sparse in one go.

        min (lam/2)||Theta||^2 + (1/T) sum_t sum_{j not in supp x*_t} s_tj
        s.t. (Theta z_t - A_t' y_t)_j = 0 on supp(x*_t), >= 1 - s_tj elsewhere, s >= 0.

    Solved in an equivalent, smaller parametrization: for any basis B_t containing the
    support S_t, the duals with zero reduced cost on S_t correspond one to one to the
    reduced costs u_t on B_t - S_t (y_t = A_B^{-T}(c_B - r_B), r_B = 0 on S_t, u_t on the
    rest), and then the reduced costs of the non-basic columns are M_t c_t - M_t[:, B - S] u_t.
    So the rows are h_tk'vec(Theta) - M_t[k, B - S] u_t >= 1 - s (k non-basic) and
    u_tj >= 1 - s (j in B - S), with u free: no equality rows, no y.

    Args:
        A: (m, n) or (T, m, n); basis: (T, m) bases containing the supports of X;
        X: (T, n) observed optimal solutions; Z: (T, d).
    Returns:
        Theta (n, d), duals y (T, m) and an info dict.
    """
    Z = np.asarray(Z, dtype=float)
    A = np.asarray(A, dtype=float)
    T, d = Z.shape
    m, n = A.shape[-2:]
    p = n * d
    support = support_mask(X)
    extra = ~np.take_along_axis(support, basis, axis=1)  # (T, m): basic but not in the support
    sample_of_u, position_of_u = np.nonzero(extra)
    Q = sample_of_u.size
    M = _operators(A, basis)
    K = M.shape[1]
    # Coefficients of u in the non-basic rows: -M[t, k, column of u], for the u of sample t.
    values = -M[sample_of_u[:, None], np.arange(K)[None, :], basis[sample_of_u, position_of_u][:, None]]
    row = sample_of_u[:, None] * K + np.arange(K)[None, :]
    column = np.broadcast_to(np.arange(Q)[:, None], values.shape)
    nonzero = values != 0
    u_part = sp.csr_matrix((values[nonzero], (row[nonzero], column[nonzero])), shape=(T * K, Q))
    reduced = sp.vstack([sp.hstack([hinge_rows(M, Z, sparse=True), u_part]),
                         sp.hstack([sp.csr_matrix((Q, p)), sp.identity(Q)])], format="csr")
    n_rows = T * K + Q
    n_vars = p + Q + n_rows
    slack = sp.identity(n_rows, format="csr")
    blocks = [sp.hstack([-reduced, -slack]), sp.hstack([sp.csr_matrix((n_rows, p + Q)), -slack])]
    b = [-np.ones(n_rows), np.zeros(n_rows)]  # reduced + s >= 1, s >= 0
    cones = [clarabel.NonnegativeConeT(2 * n_rows)]
    if radius is not None:
        A_ball, b_ball, cone = _ball_block(n_vars, 0, p, radius)
        blocks.append(A_ball), b.append(b_ball), cones.append(cone)
    P = sp.diags(np.concatenate([np.full(p, lam), np.zeros(n_vars - p)]), format="csc")
    q = np.concatenate([np.zeros(p + Q), np.full(n_rows, 1.0 / T)])
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        x = _solve_clarabel(P, q, sp.vstack(blocks, format="csr"), np.concatenate(b), cones,
                            "dual-formulation MOM QP")
    Theta = x[:p].reshape(n, d)
    # The duals: y_t = A_B^{-T} (c_B - r_B) with r_B = u on B - S and 0 on S.
    r_basic = np.zeros((T, m))
    r_basic[sample_of_u, position_of_u] = x[p:p + Q]
    costs_basic = np.take_along_axis(Z @ Theta.T, basis, axis=1)
    y = np.linalg.solve(np.swapaxes(basis_matrices(A, basis), 1, 2), (costs_basic - r_basic)[..., None])[..., 0]
    return Theta, y, dict(equality_rows=int(support.sum()), margin_rows=int(n_rows), free_reduced_costs=int(Q))


def dual_formulation_objective(Theta, y, A, X, Z, lam: float) -> float:
    """The dual formulation's objective at (Theta, y) with optimal slacks; the equality
    residual on the support is not part of it (check it separately)."""
    A = np.asarray(A, dtype=float)
    A_stack = np.broadcast_to(A, (len(Z),) + A.shape[-2:]) if A.ndim == 2 else A
    reduced = np.asarray(Z) @ np.asarray(Theta).T - np.einsum("tmn,tm->tn", A_stack, y)
    hinge = np.where(support_mask(X), 0.0, np.maximum(0.0, 1.0 - reduced))
    return float(0.5 * lam * np.sum(np.asarray(Theta) ** 2) + hinge.sum(axis=1).mean())


# --------------------------------------------------------------------------- estimator


def _check_solutions(X_star, T: int, n: int) -> np.ndarray:
    return check_samples("X_star", X_star, T, n)


def _operators(A, basis: np.ndarray) -> np.ndarray:
    """reduced_cost_operator(A, basis)[0], (T, n - m, n), built once per distinct basis when
    A is shared (samples with the same optimal solution share a basis: few distinct ones)."""
    A = np.asarray(A, dtype=float)
    if A.ndim == 3:
        return reduced_cost_operator(A, basis)[0]
    distinct, inverse = np.unique(basis, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    try:
        M_distinct, _ = reduced_cost_operator(A, distinct)
    except BasisError as error:  # name the first training sample with that basis
        raise BasisError(int(np.flatnonzero(inverse == error.sample)[0]), error.reason) from None
    return M_distinct[inverse]


class MOM(LinearCostModel):
    """Maximum Optimality Margin: c_hat = Theta z learned from observed optimal solutions.

    Hyperparameters:
        lam: regularization weight (> 0); the objective is (lam/2)||Theta||^2 + mean hinge.
        solver: "fast" (exact working-set method) or "cvxpy" (vectorized reference).
        formulation: "basis" (the paper: hinge on the reduced costs of the observed basis)
            or "dual" (no basis: free duals, zero reduced cost on supp(x*)).
        radius: None or the radius of the ball ||Theta||_F <= radius (the set K of the paper).
        tol: margin tolerance of the fast solver's termination test.

    Learned: coef_ (n, d), objective_ (optimal training objective), solver_info_ (dict),
    n_iter_ (working-set rounds; 1 for Clarabel on the whole problem), n_features_in_.
    """

    needs_costs: ClassVar[bool] = False
    name: ClassVar[str] = "MOM"

    def __init__(self, lam: float = 1e-2, solver: str = "fast", formulation: str = "basis",
                 radius: float | None = None, tol: float = 1e-8):
        self.lam = lam
        self.solver = solver
        self.formulation = formulation
        self.radius = radius
        self.tol = tol

    def fit(self, Z, X_star=None, *, A=None, b=None, lp: StandardFormLP | None = None, basis=None, C=None):
        """Fit from features Z (T, d) and observed optimal solutions X_star (T, n) or bases (T, m).

        C is ignored (MOM never needs the costs); it is accepted so that pipelines can pass it
        to every method alike. With formulation="basis" and basis=None the bases come from
        x* alone (`lp.basis_from_solution`); pass the solver's bases to use those instead.
        """
        if self.solver not in SOLVERS:
            raise ValueError(f"unknown solver {self.solver!r}; choose one of {SOLVERS}")
        if self.formulation not in FORMULATIONS:
            raise ValueError(f"unknown formulation {self.formulation!r}; choose one of {FORMULATIONS}")
        _check_hyperparameters(self.lam, self.radius, self.tol)
        Z = check_features(Z)
        T = Z.shape[0]
        start = time.perf_counter()
        if self.formulation == "dual":
            if X_star is None:
                raise ValueError("formulation='dual' needs the observed optimal solutions X_star")
            problem = resolve_lp(A, b, lp)
            X = _check_solutions(X_star, T, problem.n)
            if problem.A.ndim == 3 and problem.A.shape[0] != T:
                raise ValueError(f"the LP has {problem.A.shape[0]} samples but Z has {T}")
            # Any basis containing the supports parametrizes the same problem (see there).
            Theta, y, info = solve_dual_formulation(problem.A, problem.basis_from_solution(X), X, Z, self.lam,
                                                    self.radius)
            self.objective_ = dual_formulation_objective(Theta, y, problem.A, X, Z, self.lam)
            self.dual_ = y
            self.n_iter_ = 1
        else:
            constraint_matrix, basis = self._bases(Z, X_star, A, b, lp, basis)
            M = _operators(constraint_matrix, basis)
            Theta, info = solve_mom(M, Z, self.lam, self.radius, self.solver, self.tol)
            self.objective_ = mom_objective(Theta, M, Z, self.lam)
            self.n_iter_ = int(info.get("rounds", 1))
        info["seconds"] = time.perf_counter() - start
        self.coef_ = Theta
        self.solver_info_ = info
        self.n_features_in_ = Z.shape[1]
        return self

    @staticmethod
    def _bases(Z, X_star, A, b, lp, basis):
        """The constraint matrix and the (T, m) bases of the training samples."""
        T = Z.shape[0]
        if basis is None:
            if X_star is None:
                raise ValueError("MOM needs the observed optimal solutions X_star (or their bases via basis=)")
            problem = resolve_lp(A, b, lp)
            return problem.A, problem.basis_from_solution(_check_solutions(X_star, T, problem.n))
        if lp is not None:
            constraint_matrix = lp.A
        elif A is not None:
            constraint_matrix = np.asarray(A, dtype=float)
        else:
            raise ValueError("the constraints are needed: pass lp=StandardFormLP or A=...")
        basis = np.asarray(basis)
        m = constraint_matrix.shape[-2]
        if basis.shape != (T, m):
            raise ValueError(f"basis must be ({T}, {m}) (one basis of m = {m} columns per sample); got {basis.shape}")
        if not np.issubdtype(basis.dtype, np.integer):
            raise ValueError(f"basis must hold integer column indices; got dtype {basis.dtype}")
        return constraint_matrix, basis
