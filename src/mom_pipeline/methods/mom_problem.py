"""The MOM training problem: hinge rows, objective, and an optimality certificate.

With T samples, M_t the reduced-cost operator of the observed optimal basis of sample t
(r_N = M_t c, see `lp.reduced_cost_operator`):

    min_Theta  (lam/2) ||Theta||_F^2 + (1/T) sum_t ||s_t||_1
    s.t.       M_t Theta z_t >= 1 - s_t,  s_t >= 0,  (optionally ||Theta||_F <= radius).

Flattening Theta row-major into w = vec(Theta) (length n*d), row k of M_t Theta z_t is
h_tk' w with h_tk = kron(M_t[k], z_t) (`hinge_rows`), so MOM is an L2-regularized hinge loss
over the rows h_tk without intercept: a linear SVM whose labels are all +1, which the generic
solvers of `mom_pipeline.solvers` take through `MOMHingeRows`.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.sparse as sp

from ..lp import BasisError, reduced_cost_operator
from ..lp.bases import build_reduced_cost_operator

# x_j counts as positive (in the support) above this times max(1, |x|_inf).
SUPPORT_TOL = 1e-9


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


class MOMHingeRows:
    """The rows h_tk of one MOM problem with products computed from M and Z (H is never formed)."""

    def __init__(self, M: np.ndarray, Z: np.ndarray):
        self.M, self.Z = M, Z
        self.T, self.K, self.n = M.shape
        self.d = Z.shape[1]
        self.n_vars, self.n_rows = self.n * self.d, self.T * self.K
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
        return self.gram_between(index, index)

    def gram_between(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """H[left] H[right]': (len(left), len(right)), one block of the rows' Gram matrix."""
        t_left, k_left = np.divmod(left, self.K)
        M_left = self.M[t_left, k_left]
        if right is left:  # one gather; numpy then computes M M' as a symmetric product
            t_right, M_right = t_left, M_left
        else:
            t_right, k_right = np.divmod(right, self.K)
            M_right = self.M[t_right, k_right]
        gram = M_left @ M_right.T
        if self.d <= self.n:
            Z_left = self.Z[t_left]
            gram *= Z_left @ (Z_left if right is left else self.Z[t_right]).T
            return gram
        if self._feature_gram is None:  # many features (kernels): the T x T Gram matrix once
            self._feature_gram = self.Z @ self.Z.T
        # Two gathers along one axis each: 2.5x faster than one np.ix_ gather at k = 2000.
        gram *= self._feature_gram.take(t_left, axis=0).take(t_right, axis=1)
        return gram

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


def support_mask(X) -> np.ndarray:
    """(T, n) boolean: x_j > SUPPORT_TOL * max(1, |x|_inf) for each sample."""
    X = np.asarray(X, dtype=float)
    return X > SUPPORT_TOL * np.maximum(1.0, np.abs(X).max(axis=1, keepdims=True))


def constraint_null_space(A) -> np.ndarray | None:
    """An orthonormal basis U (n, r) of the null space of one constraint matrix A (m, n): the
    costs MOM's reduced costs see, or None when that is all of R^n or nothing.

    Reduced costs do not change when c moves by A'y, so every reduced-cost row m_tk lies in A's
    null space (r = n - rank(A): 16 of 40 arcs on the 5 x 5 shortest path, 10 of 21 costs on the
    figures' knapsack). MOM's hinge sees Theta only through M_t Theta z_t and ||Theta||_F^2 is
    smallest with no part of Theta outside it, so the optimum is U W for the optimum W of the
    same problem on the rows M_t U: r x d unknowns instead of n x d. The dual formulation's
    block method works there (`mom_dual`). The basis formulation's working-set method does not:
    on the rotated rows of figure 4's degree-1 knapsack data it ended 3e-3 above the optimum at
    lam = 1e-6 (docs/decisions/006-cost-subspace.md)."""
    U = scipy.linalg.null_space(np.asarray(A, dtype=float))
    return U if 0 < U.shape[1] < np.shape(A)[1] else None


def operators_of_bases(A, basis: np.ndarray, cache: bool = True) -> np.ndarray:
    """reduced_cost_operator(A, basis)[0], (T, n - m, n), built once per distinct basis when
    A is shared (samples with the same optimal solution share a basis: few distinct ones).
    cache=False leaves the LP layer's cache out (`build_reduced_cost_operator`): the operator
    is freed with the caller's last reference to it."""
    A = np.asarray(A, dtype=float)
    build = reduced_cost_operator if cache else build_reduced_cost_operator
    if A.ndim == 3:
        return build(A, basis)[0]
    distinct, inverse = np.unique(basis, axis=0, return_inverse=True)
    if len(distinct) == len(basis):  # no basis shared: no gathered copy of the operators
        return build(A, basis)[0]
    inverse = inverse.ravel()
    try:
        M_distinct, _ = build(A, distinct)
    except BasisError as error:  # name the first training sample with that basis
        raise BasisError(int(np.flatnonzero(inverse == error.sample)[0]), error.reason) from None
    return M_distinct[inverse]


def kkt_certificate(Theta, M, Z, lam: float, tol: float = 1e-6) -> dict:
    """An optimality certificate for a MOM solution without a ball constraint.

    The optimum satisfies lam w = H' alpha with alpha_i = 1/T on violated rows (margin < 1),
    0 on satisfied rows (margin > 1) and alpha_i in [0, 1/T] on margin rows. The multipliers of
    the rows within `tol` of the margin are fitted by bounded least squares; any alpha in the
    box gives the lower bound D(alpha) = sum(alpha) - ||H'alpha||^2 / (2 lam) on the optimum
    (weak duality), so `gap` = P(w) - D(alpha) >= 0 bounds how far P(w) is from the optimum.

    Returns:
        dict(objective=P(w), lower_bound=D(alpha), gap, relative_gap=gap / max(1, |P|),
        stationarity=||lam w - H'alpha|| / max(1, ||lam w||)).
    """
    M = np.asarray(M, dtype=float)
    Z = np.asarray(Z, dtype=float)
    rows = MOMHingeRows(M, Z)
    weight = 1.0 / rows.T
    w = np.asarray(Theta, dtype=float).ravel()
    u = rows.margins(w)
    alpha = np.where(u < 1.0 - tol, weight, 0.0)
    margin = np.flatnonzero(np.abs(u - 1.0) <= tol)
    if margin.size:
        target = lam * w - rows.weighted_sum(alpha)
        fitted = scipy.optimize.lsq_linear(rows.dense_rows(margin).T, target, bounds=(0.0, weight))
        alpha[margin] = fitted.x
    pull = rows.weighted_sum(alpha)
    objective = mom_objective(Theta, M, Z, lam)
    lower_bound = float(alpha.sum() - pull @ pull / (2.0 * lam))
    gap = objective - lower_bound
    return dict(objective=objective, lower_bound=lower_bound, gap=gap, relative_gap=gap / max(1.0, abs(objective)),
                stationarity=float(np.linalg.norm(lam * w - pull) / max(1.0, np.linalg.norm(lam * w))))


def singular_values_and_rows(Phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(S, V') of the thin SVD Phi = U S V'.

    LAPACK's divide-and-conquer SVD (numpy's) now and then fails to converge on rank-deficient
    matrices such as kernel features or stacked reduced-cost rows (a figure-4 trial: polynomial
    degree 4, gamma 0.1, rank 70 of 375, "SVD did not converge", which ended the whole grid's
    joint fit); the slower QR-iteration driver converges on them.

    A square matrix symmetric up to round-off (kernel features of the training contexts against
    themselves) is decomposed by its symmetric part's eigendecomposition instead: the same
    singular values (the eigenvalues' magnitudes) and row space, 2.3x faster than the SVD at
    375 x 375 (17 -> 7 ms; every cell of a kernel grid decomposes one)."""
    rows, cols = Phi.shape
    if rows == cols and np.abs(Phi - Phi.T).max() <= 1e-13 * np.abs(Phi).max():
        eigenvalues, vectors = np.linalg.eigh(0.5 * (Phi + Phi.T))
        order = np.argsort(-np.abs(eigenvalues), kind="stable")
        return np.abs(eigenvalues[order]), vectors[:, order].T
    try:
        _, singular, Vt = np.linalg.svd(Phi, full_matrices=False)
    except np.linalg.LinAlgError:
        _, singular, Vt = scipy.linalg.svd(Phi, full_matrices=False, lapack_driver="gesvd")
    return singular, Vt
