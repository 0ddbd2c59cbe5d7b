"""An interior-point method for a hinge QP whose blocks couple only through shared coefficients.

    min_{W, u_1..u_T}  (lam/2) ||W||_F^2
                       + weight * sum_t [ sum_k max(0, 1 - m_tk'(W z_t) - n_tk'u_t) + sum_j max(0, 1 - u_tj) ]

W (n x d) is shared by every block t; u_t (q values) belongs to block t alone and is not
regularized (each u_tj also carries its own hinge, which keeps it bounded). The K coupled rows
of block t act on W only through c_t = W z_t. A conic solver given the whole problem factors
one large sparse KKT system; here every Newton step eliminates the u_t block by block
(a QR factorization of its (K + q) x q local rows, batched over blocks) and leaves one (n d) x (n d) Schur complement

    S = lam I + sum_t kron(F_t'F_t, z_t z_t')     (F_t: see `_newton_solver`),

formed with one matrix product over the blocks. Cost per step: O(T (K + q)^2 (q + n) + T K n^2 +
T n^2 d^2 + (n d)^3), memory O(T n^2 + (n d)^2): dense in n, meant for up to a few hundred
unknowns per block (`policy.block_ipm_fits` decides what MOM hands it).

Mehrotra's predictor-corrector on  H w + s - 1 = t >= 0 (multipliers alpha) and s >= 0
(multipliers nu = weight - alpha), as `interior_point.hinge_qp_ipm`. It stops when the primal and
dual residuals are below `tol` (relative) and the complementarity t'alpha + s'nu, which is then
the duality gap, is below gap_tol * max(1, |objective|).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from .interior_point import longest_step


class BlockHingeRows:
    """Products with the rows of the block hinge QP: M (T, K, n), N (T, K, q), Z (T, d).

    Rows of block t: the K coupled rows m_tk'(W z_t) + n_tk'u_t, then the q local rows u_tj;
    margins and multipliers are (T, K + q) arrays in that order.
    """

    def __init__(self, M: np.ndarray, N: np.ndarray, Z: np.ndarray):
        self.M, self.N, self.Z = M, N, Z
        self.T, self.K, self.n = M.shape
        self.q, self.d = N.shape[2], Z.shape[1]

    def margins(self, W: np.ndarray, U: np.ndarray) -> np.ndarray:
        costs = self.Z @ W.T
        coupled = (self.M @ costs[:, :, None])[..., 0] + (self.N @ U[:, :, None])[..., 0]
        return np.concatenate([coupled, U], axis=1)

    def transpose(self, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """H' alpha as (W part (n, d), U part (T, q))."""
        coupled = alpha[:, None, :self.K]
        per_cost = (coupled @ self.M)[:, 0, :]
        return per_cost.T @ self.Z, (coupled @ self.N)[:, 0, :] + alpha[:, self.K:]


def _newton_solver(rows: BlockHingeRows, lam: float, e: np.ndarray):
    """A function solving (Lambda + H' diag(1/e) H) (dW, dU) = (bW, bU), Lambda = lam on W, 0 on U.

    Block t's rows are [M_t N_t; 0 I] with weights D = diag(1/e). With the complete QR
    factorization D^1/2 [N_t; I] = [Q  Q_c] [R_t; 0], eliminating u_t leaves on c_t the matrix
    F_t'F_t, F_t = Q_c' D^1/2 [M_t; 0]: positive semidefinite by construction. (The textbook
    difference M'D M - M'D N (E'D E)^-1 N'D M, and its Woodbury form, lose definiteness to
    round-off once e spans many decades, as it does near the optimum.)
    """
    M, N, Z = rows.M, rows.N, rows.Z
    T, K, n, d = rows.T, rows.K, rows.n, rows.d
    root = 1.0 / np.sqrt(e)
    local = np.concatenate([root[:, :K, None] * N, root[:, K:, None] * np.eye(rows.q)], axis=1)  # (T, K + q, q)
    Q, R = np.linalg.qr(local, mode="complete")
    R = R[:, :rows.q]
    weighted_M = root[:, :K, None] * M
    QtB = np.swapaxes(Q[:, :K, :rows.q], 1, 2) @ weighted_M  # Q' D^1/2 [M; 0], (T, q, n)
    F = np.swapaxes(Q[:, :K, rows.q:], 1, 2) @ weighted_M  # (T, K, n)
    G = np.einsum("tkn,tkm->tnm", F, F, optimize=True)
    R_inverse = np.linalg.inv(R)
    outer = (Z[:, :, None] * Z[:, None, :]).reshape(T, d * d)
    schur = (G.reshape(T, n * n).T @ outer).reshape(n, n, d, d).transpose(0, 2, 1, 3).reshape(n * d, n * d)
    schur[np.diag_indices(n * d)] += lam
    factor = scipy.linalg.cho_factor(schur)

    def solve(b_W: np.ndarray, b_U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v = (np.swapaxes(R_inverse, 1, 2) @ b_U[:, :, None])  # R'^-1 b_U, (T, q, 1)
        rhs = b_W - (np.swapaxes(QtB, 1, 2) @ v)[..., 0].T @ Z
        d_W = scipy.linalg.cho_solve(factor, rhs.ravel()).reshape(n, d)
        d_U = (R_inverse @ (v - QtB @ (Z @ d_W.T)[:, :, None]))[..., 0]
        return d_W, d_U

    return solve


def block_hinge_qp(M: np.ndarray, N: np.ndarray, Z: np.ndarray, lam: float, weight: float, tol: float = 1e-9,
                   gap_tol: float = 1e-9, breakdown_tol: float = 1e-6, max_iter: int = 100) -> tuple[np.ndarray, np.ndarray, dict]:
    """Solve the block hinge QP (module docstring).

    Args:
        M: (T, K, n) coefficients of the coupled rows on c_t = W z_t; N: (T, K, q) their
            coefficients on u_t; Z: (T, d).
        lam > 0; weight > 0 the weight of every hinge.
        tol: relative primal and dual residuals; gap_tol: complementarity relative to the
            objective; breakdown_tol: the dual residual accepted when the Newton system breaks
            down with the complementarity already below gap_tol.
    Returns:
        W (n, d), U (T, q) and an info dict (iterations, gap). Raises RuntimeError when the
        iterations stall or the Newton system breaks down, naming the iteration.
    """
    rows = BlockHingeRows(M, N, Z)
    T, R, n = M.shape[0], M.shape[1] + N.shape[2], M.shape[2]
    k = T * R
    W, U = np.zeros((n, Z.shape[1])), np.zeros((T, rows.q))
    s = np.full((T, R), 2.0)
    t = rows.margins(W, U) + s - 1.0
    alpha = np.full((T, R), 0.5 * weight)
    nu = weight - alpha
    for iteration in range(1, max_iter + 1):
        pull_W, pull_U = rows.transpose(alpha)
        r_W, r_U = lam * W - pull_W, -pull_U
        r_t = rows.margins(W, U) + s - 1.0 - t
        r_nu = weight - alpha - nu
        objective = 0.5 * lam * np.sum(W * W) + weight * np.maximum(0.0, 1.0 - rows.margins(W, U)).sum()
        complementarity = float(np.sum(t * alpha) + np.sum(s * nu))
        dual_residual = max(np.abs(r_W).max(), np.abs(r_U).max()) / max(1.0, np.abs(pull_W).max())
        if (dual_residual <= tol and np.abs(r_t).max() <= tol
                and complementarity <= gap_tol * max(1.0, abs(objective))):
            return W, U, dict(iterations=iteration - 1, complementarity=complementarity, objective=objective)
        mu = complementarity / (2 * k)
        e = s / nu + t / alpha
        if not (np.isfinite(e).all() and e.min() > 0):
            break
        try:
            solve = _newton_solver(rows, lam, e)
        except (np.linalg.LinAlgError, ValueError):
            break

        def direction(target, corr_t, corr_s):
            rc_t = target - t * alpha - corr_t
            rc_s = target - s * nu - corr_s
            rho = -r_t - (rc_s - s * r_nu) / nu + rc_t / alpha
            back_W, back_U = rows.transpose(rho / e)
            d_W, d_U = solve(-r_W + back_W, -r_U + back_U)
            d_alpha = (rho - rows.margins(d_W, d_U)) / e
            d_nu = r_nu - d_alpha
            return d_W, d_U, d_alpha, d_nu, (rc_t - t * d_alpha) / alpha, (rc_s - s * d_nu) / nu

        d_W, d_U, d_alpha, d_nu, d_t, d_s = direction(0.0, 0.0, 0.0)
        step = longest_step((alpha, d_alpha), (nu, d_nu), (t, d_t), (s, d_s))
        mu_affine = (np.sum((t + step * d_t) * (alpha + step * d_alpha))
                     + np.sum((s + step * d_s) * (nu + step * d_nu))) / (2 * k)
        sigma = (mu_affine / mu) ** 3
        d_W, d_U, d_alpha, d_nu, d_t, d_s = direction(sigma * mu, d_t * d_alpha, d_s * d_nu)
        step = 0.99 * longest_step((alpha, d_alpha), (nu, d_nu), (t, d_t), (s, d_s))
        W, U, alpha, nu = W + step * d_W, U + step * d_U, alpha + step * d_alpha, nu + step * d_nu
        t, s = t + step * d_t, s + step * d_s
    if dual_residual <= breakdown_tol and complementarity <= gap_tol * max(1.0, abs(objective)):
        # The Newton system became numerically singular at the very end (D spanning 30 decades
        # at a tiny lam): the iterate is optimal up to a dual residual below breakdown_tol.
        return W, U, dict(iterations=iteration - 1, complementarity=complementarity, objective=objective,
                          dual_residual=dual_residual)
    raise RuntimeError(f"the block interior-point method stalled at iteration {iteration} "
                       f"(complementarity {complementarity:.3g}, dual residual {dual_residual:.3g})")
