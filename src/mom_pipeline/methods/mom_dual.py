"""MOM without a basis (beyond the paper): the dual formulation.

Free dual variables y_t (m per sample) with reduced costs c_hat_t - A_t' y_t equal to 0 on the
support of x*_t and >= 1 - s_t elsewhere. When x*_t is non-degenerate (support = basis) it is
the basis formulation; on degenerate LPs (shortest path) it does not have to pick a basis.
"""

from __future__ import annotations

import logging
import time

import clarabel
import joblib
import numpy as np
import scipy.sparse as sp

from ..blas_threads import one_blas_thread
from ..lp import basis_matrices, nonbasic_indices
from ..solvers.block_hinge_ipm import block_hinge_qp
from ..solvers.clarabel_qp import ball_block, solve_clarabel
from ..solvers import policy
from ..solvers.policy import (DualFormulationTooLarge, block_ipm_budget, block_ipm_bytes, block_ipm_fits,
                              block_ipm_threads)
from .mom_problem import constraint_null_space, hinge_rows, operators_of_bases, support_mask

logger = logging.getLogger(__name__)

#: Clarabel's tolerances on the whole problem. At its defaults (1e-8, in its equilibrated problem)
#: the paper's shortest path at T = 100 and lambda = 1e-6 (objective 6.5e-4) stopped 1.5e-5
#: relative above the optimum; at 1e-10, 3.6e-8, for 3-17 % more time (docs/decisions/005-block-ipm-stalls.md).
CLARABEL_TOL = 1e-10


def threads_of(n_jobs: int | None) -> int:
    """Threads for n_jobs: None is 1, -1 every core this process may use (`joblib.cpu_count`,
    which reads the CPU affinity and container limits). Unlike scikit-learn, no
    `joblib.parallel_config` changes None: trial workers keep to one thread each."""
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or int(n_jobs) != n_jobs or not (n_jobs >= 1 or n_jobs == -1):
        raise ValueError(f"n_jobs must be None, -1 or a positive integer; got {n_jobs!r}")
    return int(joblib.cpu_count()) if n_jobs == -1 else int(n_jobs)


def most_free_reduced_costs(X, m: int) -> int:
    """The most free reduced costs of one sample (basic columns outside the support of x*, for
    bases of m columns; at least 1): the q that sizes the block method's estimates."""
    return max(1, int((m - support_mask(X).sum(axis=1)).max()))


def check_dual_formulation_memory(T: int, n: int, m: int, q: int, d: int, threads: int = 1, r: int | None = None) -> None:
    """Stop before any solve when the block method's estimated peak (`policy.block_ipm_bytes`)
    exceeds its budget (`policy.block_ipm_budget`), naming the sizes and the ways out.

    T samples of n columns and m rows (standard form), q the most free reduced costs of a sample,
    d features; r the costs the block method works on (n - rank(A) with one constraint matrix).
    There is no fallback: Clarabel on the whole sparse problem needed several times more memory
    than the block method wherever the block method's is large
    (docs/decisions/004-dual-formulation-memory-budget.md), so it would only fail later.
    """
    if block_ipm_fits(T, n - m, q, n, d, m, threads, r):
        return

    def needed(samples: int) -> float:
        return block_ipm_bytes(samples, n - m, q, n, d, m, threads, r)

    budget = block_ipm_budget()
    fitting, over = 0, T  # the most observations that fit: needed() grows with T
    while over - fitting > 1:
        middle = (fitting + over) // 2
        fitting, over = (middle, over) if needed(middle) <= budget else (fitting, middle)
    origin = ("set by solvers.policy.BLOCK_IPM_MAX_BYTES" if policy.BLOCK_IPM_MAX_BYTES is not None else
              "half of this machine's memory; solvers.policy.BLOCK_IPM_MAX_BYTES overrides it")
    raise DualFormulationTooLarge(
        f"dual-formulation MOM: {T} observations of {n} columns and {m} rows with {d} features need an estimated "
        f"{_size(needed(T))}, above the {_size(budget)} this fit may use ({origin}); "
        + (f"at most {fitting} observations of this problem fit. Fit fewer observations, use " if fitting else
           "not even one observation of this problem fits. Use ")
        + "formulation='basis' (bases completed from x*), or a machine with more memory.")


def _size(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.1f} GB" if n_bytes >= 2**30 else f"{n_bytes / 2**20:.0f} MB"


def check_dual_formulation_fits(A, X, n_features: int, n_jobs: int | None = None) -> None:
    """`check_dual_formulation_memory` for a fit of MOM(formulation="dual", n_jobs=n_jobs) on the
    observed solutions X (T, n) of the LP with constraint matrix A, before anything is built (a
    pipeline checks its whole training set this way before it tunes on folds of it)."""
    _checked_block_shape(np.asarray(A, dtype=float), X, n_features, threads_of(n_jobs))


def _checked_block_shape(A: np.ndarray, X, d: int, threads: int) -> tuple[np.ndarray | None, int]:
    """(the null space the block method works on, or None; its threads) of a fit on X, after
    `check_dual_formulation_memory`."""
    T, (m, n) = len(X), A.shape[-2:]
    q = most_free_reduced_costs(X, m)
    # Theta on the costs the reduced costs see (`mom_problem.constraint_null_space`): with one constraint
    # matrix, its null space (n - rank(A) of n costs), on which the block method works.
    subspace = constraint_null_space(A) if A.ndim == 2 else None
    r = n if subspace is None else subspace.shape[1]
    threads = block_ipm_threads(threads, T, n - m, q, r, d)
    check_dual_formulation_memory(T, n, m, q, d, threads, r)
    return subspace, threads


def solve_dual_formulation(A, basis, X, Z, lam: float, radius: float | None = None,
                           solver: str = "auto", threads: int = 1) -> tuple[np.ndarray, np.ndarray, dict]:
    """MOM without a basis (the problem and its parametrization: `solve_dual_formulation_clarabel`).

    solver "auto"/"fast": the block interior-point method of `solvers.block_hinge_ipm` (the
    samples couple only through Theta: every Newton step eliminates each sample's reduced
    costs u_t in a small system); with a ball constraint, with "cvxpy" (the reference), or when
    the block method fails (recorded in info["block_ipm_failure"]), one Clarabel solve of the
    whole sparse problem. A problem whose estimated peak memory exceeds the budget stops first
    (`check_dual_formulation_memory`).
    threads: threads of the block method's Newton steps (same result whatever their number).
    The block method's multipliers give info["flows"] (T, n), a dual certificate
    (`dual_formulation_certificate`); None after Clarabel.
    """
    if radius is not None or solver == "cvxpy":
        return solve_dual_formulation_clarabel(A, basis, X, Z, lam, radius)
    return solve_dual_formulation_path(A, basis, X, Z, [lam], threads)[0]


def solve_dual_formulation_path(A, basis, X, Z, lams, threads: int = 1) -> list[tuple[np.ndarray, np.ndarray, dict]]:
    """[(Theta, y, info)] for every lam of `lams` (no ball; the block method, within its memory budget).

    The block problem (reduced-cost operators, rows on u) is built once; the lams are solved
    from the largest down, each block solve starting from the previous optimum (a primal warm
    start, `block_hinge_qp(start=...)`). A lam whose block solve fails goes to Clarabel and the
    next one starts cold.
    """
    # One BLAS thread throughout: batched small factorizations, which a multi-threaded BLAS on
    # a loaded machine slows down many times over.
    with one_blas_thread():
        return _solve_path(A, basis, X, Z, lams, threads)


def _solve_path(A, basis, X, Z, lams, threads: int) -> list[tuple[np.ndarray, np.ndarray, dict]]:
    Z = np.asarray(Z, dtype=float)
    A = np.asarray(A, dtype=float)
    T = Z.shape[0]
    n = A.shape[-1]
    subspace, threads = _checked_block_shape(A, X, Z.shape[1], threads)
    M, sample_of_u, position_of_u, extra = _free_reduced_costs(A, basis, X)
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
    row_columns = np.concatenate([nonbasic_indices(basis, n), np.full((T, q), -1)], axis=1)
    row_columns[sample_of_u, K + slot] = basis[sample_of_u, position_of_u]
    # M's rows lie in A's null space; Theta = subspace W with W (r, d).
    M = M if subspace is None else M @ subspace
    order = np.argsort(-np.asarray(lams, dtype=float), kind="stable")
    solutions, start = [None] * len(order), None
    for index in order:
        lam = float(lams[index])
        started = time.perf_counter()
        try:
            W, U, info = _block_solve(M, rows_on_u, Z / sigma, lam / sigma**2, 1.0 / T, start, threads)
            if "block_ipm_retry" in info:
                logger.info("dual-formulation MOM, lambda %.3g: the block method's Newton solves lost accuracy near "
                            "the optimum; solved again with accurate solves (%s)", lam, info["block_ipm_retry"])
        except _BlockStalled as failure:
            # Free reduced costs that no row bounds from above (a direction of u along which
            # every margin grows) make the barrier problem unbounded and the block method
            # diverge; the conic solver's homogeneous embedding does not mind: the same
            # problem, solved whole.
            Theta, y, info = solve_dual_formulation_clarabel(A, basis, X, Z, lam)
            info["block_ipm_failure"] = str(failure)
            solutions[index], start = (Theta, y, info), None
            continue
        start = (W, U)
        r_basic = np.zeros((T, basis.shape[1]))
        r_basic[sample_of_u, position_of_u] = U[sample_of_u, slot]
        info.update(_flows(A, X, info.pop("multipliers"), row_columns), warm_start=bool(index != order[0]),
                    solve_seconds=time.perf_counter() - started,
                    equality_rows=int(support_mask(X).sum()), margin_rows=int(T * K + sample_of_u.size),
                    free_reduced_costs=int(sample_of_u.size), solver="block_ipm")
        Theta = W / sigma if subspace is None else subspace @ (W / sigma)
        solutions[index] = (Theta, _duals(A, basis, Z, Theta, r_basic), info)
    return solutions


class _BlockStalled(RuntimeError):
    """The block method stalled from the start it was given and again with accurate solves."""


def _block_solve(M, rows_on_u, Z, lam: float, weight: float, start, threads: int):
    """`block_hinge_qp` from `start`; when it stalls, again with accurate Newton solves
    (`accurate=True`), cold and then from `start`. On grids of small shortest paths and
    knapsacks (T = 60-750, 864 solves) 16 solves stalled and went to Clarabel, several times
    slower; with the retries none did (docs/decisions/005-block-ipm-stalls.md). The stalls' messages are kept in
    info["block_ipm_retry"]."""
    try:
        return block_hinge_qp(M, rows_on_u, Z, lam, weight, start=start, threads=threads)
    except RuntimeError as first:
        stalls = [str(first)]
    retries = [("cold", None)] + ([("warm", start)] if start is not None else [])
    for label, retry_start in retries:
        try:
            W, U, info = block_hinge_qp(M, rows_on_u, Z, lam, weight, start=retry_start, threads=threads, accurate=True)
        except RuntimeError as stall:
            stalls.append(f"{label} with accurate solves: {stall}")
            continue
        return W, U, {**info, "block_ipm_retry": "; ".join(stalls + [f"solved {label} with accurate solves"])}
    raise _BlockStalled("; ".join(stalls))


def _flows(A, X, multipliers, row_columns) -> dict:
    """The dual flows f (T, n) of the rows' multipliers: f_j = multiplier of column j's row off
    the support, and on the support the values with A_t f_t = 0 (least squares; what is left
    is info["flow_residual"])."""
    T, n = X.shape
    flows = np.zeros((T, n))
    real = row_columns >= 0  # padded u slots have no column
    flows[np.nonzero(real)[0], row_columns[real]] = multipliers[real]
    # One constraint matrix for every sample: no (samples, m, n) copies of it (1.4 GB each on
    # the 180-arc grid at T = 10,000).
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


def _free_reduced_costs(A, basis, X):
    """M (T, K, n) of the bases and the (sample, position in the basis) of every free reduced cost."""
    support = support_mask(X)
    extra = ~np.take_along_axis(support, basis, axis=1)  # (T, m): basic but not in the support
    sample_of_u, position_of_u = np.nonzero(extra)
    # Not cached: the block method needs them only on A's null space, and a cached copy on all n
    # costs stayed alive through its Newton steps (2.2 GB of a 7.2 GB peak on the 760-arc grid
    # at T = 1,000).
    return operators_of_bases(A, basis, cache=False), sample_of_u, position_of_u, extra


def _duals(A, basis, Z, Theta, r_basic):
    """y_t = A_B^{-T} (c_B - r_B): the duals with reduced costs r_B on the basis."""
    costs_basic = np.take_along_axis(Z @ Theta.T, basis, axis=1)
    return np.linalg.solve(np.swapaxes(basis_matrices(A, basis), 1, 2), (costs_basic - r_basic)[..., None])[..., 0]


def solve_dual_formulation_clarabel(A, basis, X, Z, lam: float,
                                    radius: float | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
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
    M, sample_of_u, position_of_u, _ = _free_reduced_costs(A, basis, X)
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
    with one_blas_thread():
        x = solve_clarabel(P, q, sp.vstack(blocks, format="csr"), np.concatenate(b), cones,
                            "dual-formulation MOM QP", tol=CLARABEL_TOL)
    Theta = x[:p].reshape(n, d)
    # The duals: y_t = A_B^{-T} (c_B - r_B) with r_B = u on B - S and 0 on S.
    r_basic = np.zeros((T, m))
    r_basic[sample_of_u, position_of_u] = x[p:p + Q]
    return Theta, _duals(A, basis, Z, Theta, r_basic), dict(
        equality_rows=int(support_mask(X).sum()), margin_rows=int(n_rows), free_reduced_costs=int(Q), solver="clarabel")


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
