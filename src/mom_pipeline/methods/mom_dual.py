"""Solving MOM without a basis (the dual formulation; the problem is `mom_dual_problem`).

* the block interior-point method of `solvers.block_hinge_ipm` on the problem's blocks (the
  samples couple only through Theta), within the memory budget of `solvers.policy`
  (`check_dual_formulation_memory`: a problem too large stops before anything is solved);
* Clarabel on the whole sparse problem: with a ball constraint, for the "cvxpy" reference, and
  for a constant on which the block method stalls.
`mom_solve.solve_mom(..., formulation="dual")` is the entry point for one constant;
`solve_dual_formulation_path` solves a grid of constants on one block problem.
"""

from __future__ import annotations

import logging
import time

import joblib
import numpy as np

from ..blas_threads import one_blas_thread
from ..solvers.block_hinge_ipm import block_hinge_qp
from ..solvers.clarabel_qp import solve_clarabel
from ..solvers.policy import block_ipm_threads, check_dual_formulation_memory
from ..solvers.result import SolverResult
from .mom_dual_problem import dual_block_problem, dual_conic_problem, duals_of, flows_of, most_free_reduced_costs
from .mom_problem import constraint_null_space, support_mask

logger = logging.getLogger(__name__)

#: Clarabel's tolerances on the whole problem. Its defaults (1e-8) hold in its equilibrated
#: problem; at tiny lambda the unscaled objective then stops well above the optimum (1e-5
#: relative on the paper's shortest path at lambda = 1e-6), which 1e-10 brings to about 1e-8
#: (docs/decisions/005-block-ipm-stalls.md).
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


def check_dual_formulation_fits(A, X, n_features: int, n_jobs: int | None = None) -> None:
    """`policy.check_dual_formulation_memory` for a fit of MOM(formulation="dual", n_jobs=n_jobs)
    on the observed solutions X (T, n) of the LP with constraint matrix A, before anything is
    built (a pipeline checks its whole training set this way before it tunes on folds of it)."""
    _checked_block_shape(np.asarray(A, dtype=float), X, n_features, threads_of(n_jobs))


def _checked_block_shape(A: np.ndarray, X, d: int, threads: int) -> tuple[np.ndarray | None, int]:
    """(the null space the block method works on, or None; its threads) of a fit on X, after
    `policy.check_dual_formulation_memory`."""
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
                           solver: str = "auto", threads: int = 1, absent=None) -> tuple[np.ndarray, np.ndarray, dict]:
    """(Theta (n, d), duals y (T, m), info) of MOM without a basis (`mom_dual_problem`).

    solver "auto"/"fast": the block interior-point method; with a ball constraint, with
    "cvxpy" (the reference), or when the block method fails (recorded in
    info["block_ipm_failure"]), one Clarabel solve of the whole sparse problem. A problem whose
    estimated peak memory exceeds the budget stops first.
    threads: threads of the block method's Newton steps (same result whatever their number).
    The block method's multipliers give info["flows"] (T, n), a dual certificate
    (`mom_dual_problem.dual_formulation_certificate`); None after Clarabel.
    absent: (T, n) columns each sample's LP lacks (`mom_dual_problem.dual_block_problem`;
    block method only).
    """
    if radius is not None or solver == "cvxpy":
        if absent is not None:
            raise ValueError("absent columns are solved by the block method only (no ball, solver 'auto')")
        return solve_dual_formulation_clarabel(A, basis, X, Z, lam, radius)
    return solve_dual_formulation_path(A, basis, X, Z, [lam], threads, absent)[0]


def solve_dual_formulation_path(A, basis, X, Z, lams, threads: int = 1,
                                absent=None) -> list[tuple[np.ndarray, np.ndarray, dict]]:
    """[(Theta, y, info)] for every lam of `lams` (no ball; the block method, within its memory budget).

    The block problem is built once; the lams are solved from the largest down, each block
    solve starting from the previous optimum (a primal warm start, `block_hinge_qp(start=...)`).
    A lam whose block solve fails goes to Clarabel and the next one starts cold (with absent
    columns it raises: Clarabel's whole problem has no rows to leave out).
    """
    # One BLAS thread throughout: batched small factorizations, which a multi-threaded BLAS on
    # a loaded machine slows down many times over.
    with one_blas_thread():
        return _solve_path(A, basis, X, Z, lams, threads, absent)


def _solve_path(A, basis, X, Z, lams, threads: int, absent=None) -> list[tuple[np.ndarray, np.ndarray, dict]]:
    Z = np.asarray(Z, dtype=float)
    A = np.asarray(A, dtype=float)
    T = Z.shape[0]
    subspace, threads = _checked_block_shape(A, X, Z.shape[1], threads)
    problem = dual_block_problem(A, basis, X, Z, subspace, absent)
    absent_rows = problem.absent_rows
    order = np.argsort(-np.asarray(lams, dtype=float), kind="stable")
    solutions, start = [None] * len(order), None
    for index in order:
        lam = float(lams[index])
        started = time.perf_counter()
        try:
            result = _block_solve(problem.M, problem.rows_on_u, problem.Z, lam / problem.sigma**2, 1.0 / T, start,
                                  threads)
        except _BlockStalled as failure:
            if absent_rows is not None:
                raise BlockMethodFailed(f"dual-formulation MOM with absent columns, lambda {lam:.3g}: {failure}") \
                    from failure
            # Free reduced costs that no row bounds from above (a direction of u along which
            # every margin grows) make the barrier problem unbounded and the block method
            # diverge; the conic solver's homogeneous embedding does not mind: the same
            # problem, solved whole.
            Theta, y, info = solve_dual_formulation_clarabel(A, basis, X, Z, lam)
            info["block_ipm_failure"] = str(failure)
            solutions[index], start = (Theta, y, info), None
            continue
        (W, U), info = result.solution, result.info()
        if "block_ipm_retry" in info:
            logger.info("dual-formulation MOM, lambda %.3g: the block method's Newton solves lost accuracy near "
                        "the optimum; solved again with accurate solves (%s)", lam, info["block_ipm_retry"])
        start = (W, U)
        multipliers = result.extra["multipliers"]
        if absent_rows is not None:
            # An emptied row's hinge is the constant 1 and its multiplier no flow.
            multipliers = np.where(absent_rows, 0.0, multipliers)
            if "objective" in info:
                info["objective"] -= float(absent_rows[:, :problem.M.shape[1]].sum()) / T
        info.update(flows_of(A, X, multipliers, problem.row_columns),
                    warm_start=bool(index != order[0]), solve_seconds=time.perf_counter() - started,
                    equality_rows=int(support_mask(X).sum()),
                    margin_rows=int(T * problem.M.shape[1] + problem.sample_of_u.size),
                    free_reduced_costs=int(problem.sample_of_u.size), solver="block_ipm")
        Theta = problem.theta(W)
        solutions[index] = (Theta, duals_of(A, basis, Z, Theta, problem.basic_reduced_costs(U, basis.shape[1])), info)
    return solutions


class BlockMethodFailed(RuntimeError):
    """The block method failed on a problem that has no whole-problem fallback (absent columns)."""


class _BlockStalled(RuntimeError):
    """The block method stalled from the start it was given and again with accurate solves."""


def _block_solve(M, rows_on_u, Z, lam: float, weight: float, start, threads: int) -> SolverResult:
    """`block_hinge_qp` from `start`; when it stalls, again with accurate Newton solves
    (`accurate=True`), cold and then from `start`: near the optimum of small, degenerate
    problems the plain Newton solves can lose the digits the last steps need, and Clarabel,
    the last resort, is several times slower (docs/decisions/005-block-ipm-stalls.md). The
    stalls' messages are kept in extra["block_ipm_retry"]."""
    try:
        return block_hinge_qp(M, rows_on_u, Z, lam, weight, start=start, threads=threads)
    except RuntimeError as first:
        stalls = [str(first)]
    retries = [("cold", None)] + ([("warm", start)] if start is not None else [])
    for label, retry_start in retries:
        try:
            result = block_hinge_qp(M, rows_on_u, Z, lam, weight, start=retry_start, threads=threads, accurate=True)
        except RuntimeError as stall:
            stalls.append(f"{label} with accurate solves: {stall}")
            continue
        result.extra["block_ipm_retry"] = "; ".join(stalls + [f"solved {label} with accurate solves"])
        return result
    raise _BlockStalled("; ".join(stalls))


def solve_dual_formulation_clarabel(A, basis, X, Z, lam: float,
                                    radius: float | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """MOM without a basis: Clarabel on the whole problem (`mom_dual_problem.dual_conic_problem`).

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
    P, q, constraints, b, cones, (p, sample_of_u, position_of_u) = dual_conic_problem(A, basis, X, Z, lam, radius)
    with one_blas_thread():
        x = solve_clarabel(P, q, constraints, b, cones, "dual-formulation MOM QP", tol=CLARABEL_TOL).solution
    Theta = x[:p].reshape(n, d)
    # The duals: y_t = A_B^{-T} (c_B - r_B) with r_B = u on B - S and 0 on S.
    r_basic = np.zeros((T, m))
    r_basic[sample_of_u, position_of_u] = x[p:p + sample_of_u.size]
    return Theta, duals_of(A, basis, Z, Theta, r_basic), dict(
        equality_rows=int(support_mask(X).sum()), margin_rows=int(q.size - p - sample_of_u.size),
        free_reduced_costs=int(sample_of_u.size), solver="clarabel")
