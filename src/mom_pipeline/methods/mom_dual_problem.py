"""The MOM problem without a basis (the dual formulation): problem, rows and certificate.

    min (lam/2)||Theta||^2 + (1/T) sum_t sum_{j not in supp x*_t} s_tj
    s.t. (Theta z_t - A_t' y_t)_j = 0 on supp(x*_t), >= 1 - s_tj elsewhere, s >= 0,

free dual variables y_t (m per sample). When x*_t is non-degenerate (support = basis) this is
the basis formulation (`mom_problem`); on degenerate LPs (shortest path) it does not have to
pick a basis.

It is written in an equivalent, smaller parametrization: for any basis B_t containing the
support S_t, the duals with zero reduced cost on S_t correspond one to one to the reduced
costs u_t on B_t - S_t (y_t = A_B^{-T}(c_B - r_B), r_B = 0 on S_t, u_t on the rest), and then
the reduced costs of the non-basic columns are M_t c_t - M_t[:, B - S] u_t. So the rows are
h_tk'vec(Theta) - M_t[k, B - S] u_t >= 1 - s (k non-basic) and u_tj >= 1 - s (j in B - S),
with u free: no equality rows, no y. Two shapes of the same rows:

* `dual_block_problem`: blocks per sample for `solvers.block_hinge_ipm` (the samples couple
  only through Theta), on A's null space and rescaled as the basis formulation;
* `dual_conic_problem`: the whole problem as one sparse conic program for Clarabel.

`dual_formulation_objective` and `dual_formulation_certificate` check a solution (Theta, y).
How it is solved, and the memory check before, are `mom_dual`.
"""

from __future__ import annotations

from dataclasses import dataclass

import clarabel
import numpy as np
import scipy.sparse as sp

from ..lp import basis_matrices, nonbasic_indices
from ..solvers.clarabel_qp import ball_block
from .mom_problem import hinge_rows, operators_of_bases, support_mask


def most_free_reduced_costs(X, m: int) -> int:
    """The most free reduced costs of one sample (basic columns outside the support of x*, for
    bases of m columns; at least 1): the q that sizes the block method's estimates."""
    return max(1, int((m - support_mask(X).sum(axis=1)).max()))


def free_reduced_costs(A, basis, X):
    """M (T, K, n) of the bases, the (sample, position in the basis) of every free reduced cost,
    and the (T, m) mask of them."""
    support = support_mask(X)
    extra = ~np.take_along_axis(support, basis, axis=1)  # (T, m): basic but not in the support
    sample_of_u, position_of_u = np.nonzero(extra)
    # Not cached: the block method needs the operators only on A's null space, and a cached copy
    # on all n costs would stay alive through its Newton steps, at their peak.
    return operators_of_bases(A, basis, cache=False), sample_of_u, position_of_u, extra


@dataclass
class DualBlockProblem:
    """The dual formulation as blocks of `solvers.block_hinge_ipm.block_hinge_qp`: sample t has
    the coupled rows M[t] (K, r) on W (Theta on the costs the rows see) and rows_on_u[t] (K, q)
    on its free reduced costs u_t (slots beyond q_t padded: u = 1 there costs nothing), with the
    features Z rescaled by sigma so that the largest row norm on Theta is 1."""

    M: np.ndarray
    rows_on_u: np.ndarray
    Z: np.ndarray
    sigma: float
    subspace: np.ndarray | None
    row_columns: np.ndarray  # (T, K + q): the LP column of each row, -1 for padded slots
    sample_of_u: np.ndarray
    position_of_u: np.ndarray
    slot: np.ndarray  # the u slot of each free reduced cost
    absent_rows: np.ndarray | None = None  # (T, K + q): rows of columns the sample's LP lacks

    def theta(self, W: np.ndarray) -> np.ndarray:
        """Theta (n, d) of the block solution W (on the rescaled features and the subspace)."""
        return W / self.sigma if self.subspace is None else self.subspace @ (W / self.sigma)

    def basic_reduced_costs(self, U: np.ndarray, m: int) -> np.ndarray:
        """r_B (T, m): the free reduced costs u on B - S, 0 on the support."""
        r_basic = np.zeros((U.shape[0], m))
        r_basic[self.sample_of_u, self.position_of_u] = U[self.sample_of_u, self.slot]
        return r_basic


def dual_block_problem(A: np.ndarray, basis, X, Z: np.ndarray, subspace: np.ndarray | None,
                       absent=None) -> DualBlockProblem:
    """The block problem of observed solutions X (T, n), bases containing their supports and
    features Z (T, d); subspace: an orthonormal basis of A's null space (or None), on which
    every reduced-cost row lies (`mom_problem.constraint_null_space`).

    absent: (T, n) bool or None, the columns sample t's LP lacks (x_tj fixed at 0: TNTP zones
    that a route may not enter). Their rows and free reduced costs leave the blocks (the blocks
    are as long as the longest sample's present rows; a shorter one's padding rows are emptied,
    each then reading 0 >= 1 - s: a constant hinge of 1 and a multiplier that is not a flow).
    Exact when no present column's reduced cost depends on an absent one under the basis
    (absent basic columns form pendant subtrees on a network); checked here."""
    T, n = Z.shape[0], A.shape[-1]
    M, sample_of_u, position_of_u, extra = free_reduced_costs(A, basis, X)
    nonbasic = nonbasic_indices(basis, n)
    absent_rows = None
    if absent is not None:
        absent = np.asarray(absent, dtype=bool)
        absent_nonbasic = np.take_along_axis(absent, nonbasic, axis=1)  # (T, K)
        for t in np.flatnonzero(absent.any(axis=1)):
            coupling = np.abs(M[t][~absent_nonbasic[t]][:, absent[t]])
            if coupling.size and coupling.max() > 1e-12 * max(1.0, float(np.abs(M[t]).max())):
                raise ValueError(f"sample {t}: a present column's reduced cost depends on an absent column under "
                                 "the given basis (absent basic columns must not lie between present ones)")
        # Present rows first, as many as the longest sample has.
        order = np.argsort(absent_nonbasic, axis=1, kind="stable")[:, :max(1, int((~absent_nonbasic).sum(1).max()))]
        M = np.take_along_axis(M, order[:, :, None], axis=1)
        nonbasic = np.take_along_axis(nonbasic, order, axis=1)
        absent_nonbasic = np.take_along_axis(absent_nonbasic, order, axis=1)
        M[absent_nonbasic] = 0.0
        extra = extra & ~np.take_along_axis(absent, basis, axis=1)
        keep = extra[sample_of_u, position_of_u]
        sample_of_u, position_of_u = sample_of_u[keep], position_of_u[keep]
    K, q = M.shape[1], max(1, int(extra.sum(axis=1).max()))
    slot = np.cumsum(extra, axis=1)[sample_of_u, position_of_u] - 1  # u of sample t: slots 0..q_t-1
    # Coupled rows of sample t: its K non-basic reduced costs M_t c_t - M_t[:, B - S] u_t; each
    # u_j >= 1 - s has its own row (padded slots beyond q_t stand alone: u = 1 costs nothing).
    rows_on_u = np.zeros((T, K, q))
    rows_on_u[sample_of_u, :, slot] = -M[sample_of_u, :, basis[sample_of_u, position_of_u]]
    # Features rescaled so the largest row norm on Theta is 1 (as the basis formulation).
    sigma = float((np.linalg.norm(M, axis=2) * np.linalg.norm(Z, axis=1)[:, None]).max())
    sigma = sigma if sigma > 0 else 1.0
    # The columns of the rows: K non-basic ones, then the basic columns of the u slots.
    row_columns = np.concatenate([nonbasic, np.full((T, q), -1)], axis=1)
    row_columns[sample_of_u, K + slot] = basis[sample_of_u, position_of_u]
    if absent is not None:
        absent_rows = np.zeros(row_columns.shape, dtype=bool)
        real = row_columns >= 0
        absent_rows[real] = absent[np.nonzero(real)[0], row_columns[real]]
    # M's rows lie in A's null space; Theta = subspace W with W (r, d).
    M = M if subspace is None else M @ subspace
    return DualBlockProblem(M, rows_on_u, Z / sigma, sigma, subspace, row_columns, sample_of_u, position_of_u, slot,
                            absent_rows)


def dual_conic_problem(A: np.ndarray, basis, X, Z: np.ndarray, lam: float, radius: float | None = None):
    """The whole dual formulation as one sparse conic QP: min 0.5 x'Px + q'x s.t. b - A x in
    cones (`solvers.clarabel_qp.solve_clarabel`'s form), over x = (vec Theta, u, s).

    Returns (P, q, A, b, cones, layout) with layout = (p, sample_of_u, position_of_u): the first
    p = n d entries of x are vec(Theta), the next ones the free reduced costs u.
    """
    T, d = Z.shape
    n = A.shape[-1]
    p = n * d
    M, sample_of_u, position_of_u, _ = free_reduced_costs(A, basis, X)
    Q = sample_of_u.size
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
        A_ball, b_ball, cone = ball_block(n_vars, 0, p, radius)
        blocks.append(A_ball), b.append(b_ball), cones.append(cone)
    P = sp.diags(np.concatenate([np.full(p, lam), np.zeros(n_vars - p)]), format="csc")
    q = np.concatenate([np.zeros(p + Q), np.full(n_rows, 1.0 / T)])
    return P, q, sp.vstack(blocks, format="csr"), np.concatenate(b), cones, (p, sample_of_u, position_of_u)


def duals_of(A, basis, Z, Theta, r_basic):
    """y_t = A_B^{-T} (c_B - r_B): the duals with reduced costs r_B on the basis."""
    costs_basic = np.take_along_axis(Z @ Theta.T, basis, axis=1)
    return np.linalg.solve(np.swapaxes(basis_matrices(A, basis), 1, 2), (costs_basic - r_basic)[..., None])[..., 0]


def flows_of(A, X, multipliers, row_columns) -> dict:
    """The dual flows f (T, n) of the rows' multipliers: f_j = multiplier of column j's row off
    the support, and on the support the values with A_t f_t = 0 (least squares; what is left
    is flow_residual)."""
    T, n = X.shape
    flows = np.zeros((T, n))
    real = row_columns >= 0  # padded u slots have no column
    flows[np.nonzero(real)[0], row_columns[real]] = multipliers[real]
    # One constraint matrix for every sample: no (samples, m, n) copies of it, which would be
    # the largest arrays of a large grid.
    shared = A.ndim == 2
    support = support_mask(X)
    for size in np.unique(support.sum(axis=1)):
        samples = np.flatnonzero(support.sum(axis=1) == size)
        columns = np.nonzero(support[samples])[1].reshape(samples.size, size)
        if shared:
            A_support = np.moveaxis(A[:, columns], 0, 1)  # (s, m, size)
            pushed = -(flows[samples] @ A.T)
        else:
            A_support = np.take_along_axis(A[samples], columns[:, None, :], axis=2)
            pushed = -np.einsum("smn,sn->sm", A[samples], flows[samples])
        flows[samples[:, None], columns] = (np.linalg.pinv(A_support) @ pushed[..., None])[..., 0]
    residual = flows @ A.T if shared else np.einsum("tmn,tn->tm", A, flows)
    return dict(flows=flows, flow_residual=float(np.abs(residual).max()))


def dual_formulation_objective(Theta, y, A, X, Z, lam: float) -> float:
    """The dual formulation's objective at (Theta, y) with optimal slacks; the equality
    residual on the support is not part of it (check it separately)."""
    A = np.asarray(A, dtype=float)
    A_stack = np.broadcast_to(A, (len(Z),) + A.shape[-2:]) if A.ndim == 2 else A
    reduced = np.asarray(Z) @ np.asarray(Theta).T - np.einsum("tmn,tm->tn", A_stack, y)
    hinge = np.where(support_mask(X), 0.0, np.maximum(0.0, 1.0 - reduced))
    return float(0.5 * lam * np.sum(np.asarray(Theta) ** 2) + hinge.sum(axis=1).mean())


def dual_formulation_certificate(Theta, y, flows, A, X, Z, lam: float) -> dict:
    """An optimality certificate of a dual-formulation MOM solution (Theta, y) by weak duality.

    The Lagrange dual of the dual formulation: flows f_t (one value per column) with
    A_t f_t = 0, f_tj in [0, 1/T] off the support of x*_t and free on it, give the lower bound
    D(f) = sum of f off the supports - ||sum_t f_t z_t'||^2 / (2 lam) on the optimum; at the
    optimum lam Theta = sum_t f_t z_t'. Off-support flows are clipped into [0, 1/T] first. The
    bound is exact for flow_residual = 0; a residual of round-off size moves it by about
    flow_residual * max |y| (1e-8 relative at lam = 1e-6 on the tests' shortest paths).

    Returns:
        dict(objective=P(Theta, y), lower_bound=D(f), gap, relative_gap=gap / max(1, |P|),
        flow_residual=max |A_t f_t|, equality_residual=max |reduced cost| on the supports,
        stationarity=||lam Theta - sum_t f_t z_t'|| / max(1, ||lam Theta||)).
    """
    A = np.asarray(A, dtype=float)
    Z = np.asarray(Z, dtype=float)
    T = Z.shape[0]
    A_stack = np.broadcast_to(A, (T,) + A.shape[-2:])
    support = support_mask(X)
    f = np.where(support, flows, np.clip(flows, 0.0, 1.0 / T))
    pull = f.T @ Z  # sum_t f_t z_t', (n, d)
    objective = dual_formulation_objective(Theta, y, A, X, Z, lam)
    lower_bound = float(f[~support].sum() - np.sum(pull * pull) / (2.0 * lam))
    reduced = Z @ np.asarray(Theta).T - np.einsum("tmn,tm->tn", A_stack, y)
    gap = objective - lower_bound
    return dict(objective=objective, lower_bound=lower_bound, gap=gap, relative_gap=gap / max(1.0, abs(objective)),
                flow_residual=float(np.abs(np.einsum("tmn,tn->tm", A_stack, f)).max()),
                equality_residual=float(np.abs(reduced[support]).max(initial=0.0)),
                stationarity=float(np.linalg.norm(lam * np.asarray(Theta) - pull) / max(1.0, np.linalg.norm(lam * Theta))))
