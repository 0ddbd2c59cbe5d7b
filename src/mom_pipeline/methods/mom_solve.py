"""Solving the MOM problem: one entry point (`solve_mom(..., formulation=)`) and the basis
formulation's solvers (the dual formulation's are `mom_dual`).

* "auto" (the default; "fast" is the same): the exact working-set method of
  `solvers.hinge_working_set` on MOM's rows, rescaled to a largest row norm of 1; which
  linear algebra each of its steps uses is `solvers.policy`'s choice, by problem shape.
* "cvxpy": the reference, one vectorized matrix constraint H w >= 1 - s through Clarabel.
"""

from __future__ import annotations

import numpy as np

from ..blas_threads import one_blas_thread
from ..solvers.hinge_path import solve_hinge_path
from ..solvers.hinge_working_set import solve_working_set
from ..solvers.policy import cost_subspace_pays
from .mom_dual import solve_dual_formulation
from .mom_problem import MOMHingeRows, constraint_null_space, hinge_rows, singular_values_and_rows

SOLVERS = ("auto", "fast", "cvxpy")
FORMULATIONS = ("basis", "dual")


def _check_hyperparameters(lam, radius, tol) -> None:
    if not np.isfinite(lam) or lam <= 0:
        raise ValueError(f"lam must be a positive finite number; got {lam}")
    if radius is not None and (not np.isfinite(radius) or radius <= 0):
        raise ValueError(f"radius must be None or a positive finite number; got {radius}")
    if not tol > 0:
        raise ValueError(f"tol must be positive; got {tol}")


def solve_hinge_qp(M, Z, lam: float, radius: float | None = None, tol: float = 1e-8, w0=None,
                   band: float = 1e-2, linear_below: float = 1e-2, max_rounds: int = 100,
                   A=None) -> tuple[np.ndarray, dict]:
    """Exact MOM solution by the working-set method (`solvers.hinge_working_set`).

    Args:
        M: (T, K, n) reduced-cost operators; Z: (T, d) features; lam > 0; radius: ball or None.
        tol: a row breaks its assumption when its margin is beyond 1 by more than tol.
        w0: (n*d,) warm start; None: the smoothed-hinge Newton start (`solvers.hinge_newton.smoothed_hinge_start`).
        band: rows whose warm-start margin is within band of 1 start in the working set;
            rows are assumed violated below 1 - band and satisfied above 1 + band.
        A: the constraint matrix when one (m, n) matrix serves every sample (its null space
            holds every reduced-cost row: `cost_subspace`), else None.
    Returns:
        Theta (n, d) and the flat diagnostics of the solver's `SolverResult` (`SolverResult.info`:
        iterations = working-set rounds, path, working-set size, Newton steps, ...).
    """
    # Many small BLAS calls: one thread avoids spin-waiting threads on a busy machine.
    with one_blas_thread():
        return _solve_rescaled(np.asarray(M, dtype=float), np.asarray(Z, dtype=float), lam, radius, tol, w0,
                               band, linear_below, max_rounds, A)


def cost_subspace(M: np.ndarray, A: np.ndarray | None = None) -> np.ndarray | None:
    """An orthonormal basis U (n, r) of a subspace holding every reduced-cost row m_tk, or None
    when that is all n costs.

    MOM's hinge sees Theta only through M_t Theta z_t, and the regularizer ||Theta||_F^2 is
    strictly smallest with no part of Theta outside the rows' span, so the optimum is U Theta_r
    for the optimum Theta_r of the same problem on the rows M U: r x d unknowns instead of
    n x d. Reduced costs do not change when c moves by A'y, so the rows lie in the null space
    of A, of dimension n - rank(A) (the knapsack of the figures: 10 of 21 costs; the 5 x 5
    shortest path: 16 of 40 arcs). With one constraint matrix A (2-D) U spans that null space;
    otherwise (A None or one per sample) U spans the rows themselves. Ranks use numpy's
    tolerance (`matrix_rank`'s) on the singular values.
    """
    if A is not None and np.ndim(A) == 2:
        return constraint_null_space(A)
    rows = M.reshape(-1, M.shape[-1])
    if rows.shape[0] == 0:
        return None
    singular, Vt = singular_values_and_rows(rows)
    rank = _rank(singular, rows.shape)
    return Vt[:rank].T if 0 < rank < M.shape[-1] else None


def _rank(singular: np.ndarray, shape: tuple) -> int:
    return int(np.sum(singular > singular[0] * max(shape) * np.finfo(float).eps)) if singular.size and singular[0] > 0 else 0


def _row_scale(M, Z) -> float:
    # Rescale the rows to a largest norm of 1 (features Z / sigma, w * sigma, lam / sigma^2:
    # the same problem) so that kernel features of any magnitude stay well conditioned.
    sigma = float((np.linalg.norm(M, axis=2) * np.linalg.norm(Z, axis=1)[:, None]).max())
    return sigma if sigma > 0 else 1.0


def _solve_rescaled(M, Z, lam, radius, tol, w0, band, linear_below, max_rounds, A=None):
    sigma = _row_scale(M, Z)
    U = _pays(cost_subspace(M, A), Z)
    rows = MOMHingeRows(M if U is None else M @ U, Z / sigma)
    if w0 is not None:
        w0 = np.asarray(w0, dtype=float).reshape(M.shape[-1], Z.shape[1]) * sigma
        w0 = (w0 if U is None else U.T @ w0).ravel()
    result = solve_working_set(rows, lam / sigma**2, 1.0 / rows.T, None if radius is None else radius * sigma,
                               tol, w0, band, linear_below, max_rounds)
    return _full_costs(U, result.solution.reshape(rows.n, rows.d) / sigma), result.info()


def _pays(U: np.ndarray | None, Z: np.ndarray) -> np.ndarray | None:
    """U when the policy solves on the cost subspace at this size (`policy.cost_subspace_pays`)."""
    return U if U is not None and cost_subspace_pays(U.shape[1] * Z.shape[1]) else None


def _full_costs(U: np.ndarray | None, Theta: np.ndarray) -> np.ndarray:
    """Theta (n, d) from the coefficients on the cost subspace U (`cost_subspace`)."""
    return Theta if U is None else U @ Theta


def solve_mom_path(M, Z, lams, tol: float = 1e-8, start_margins: list | None = None,
                   A=None) -> list[tuple[np.ndarray, dict]]:
    """[(Theta (n, d), info)] for every lam of `lams`: exact MOM solutions without a ball, by
    the regularization path of `solvers.hinge_path` (the rows are built and rescaled once).
    start_margins: None or per lam None or (T*K,) optimality margins of a related problem on
    the same samples (see `solve_hinge_path`; margins do not change with the rescaling);
    A as `solve_hinge_qp`."""
    for lam in lams:
        _check_hyperparameters(lam, None, tol)
    M, Z = np.asarray(M, dtype=float), np.asarray(Z, dtype=float)
    sigma = _row_scale(M, Z)
    U = _pays(cost_subspace(M, A), Z)
    rows = MOMHingeRows(M if U is None else M @ U, Z / sigma)
    with one_blas_thread():
        path = solve_hinge_path(rows, np.asarray(lams, dtype=float) / sigma**2, 1.0 / rows.T, tol,
                                start_margins=start_margins)
    return [(_full_costs(U, result.solution.reshape(rows.n, rows.d) / sigma), result.info()) for result in path]


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


def solve_mom(M, Z, lam: float, radius: float | None = None, solver: str = "auto", tol: float = 1e-8, A=None, *,
              formulation: str = "basis", basis=None, X=None, threads: int = 1, absent=None) -> tuple[np.ndarray, dict]:
    """The MOM coefficient Theta (n, d) and the solve's diagnostics, for features Z (T, d): the
    one entry point of both formulations (`MOM.fit` and the online FTRL re-solves call it).

    formulation "basis": M (T, K, n) the reduced-cost operators of the observed bases; A as
        `solve_hinge_qp` (the fast solver's reduction; the cvxpy reference solves the whole
        problem); the working-set method, or the cvxpy reference (solver="cvxpy").
    formulation "dual": M unused (None); A the constraint matrix, X (T, n) the observed
        solutions and basis (T, m) bases containing their supports (`mom_dual`); the block
        method on `threads` threads, or Clarabel (solver="cvxpy", or with a ball); the
        diagnostics hold the duals y (T, m) as info["duals"] and the dual flows as info["flows"]
        ((T, n), None after Clarabel). tol does not apply (the block method's own tolerances).
        absent: (T, n) bool, columns each sample's LP lacks (`mom_dual_problem.dual_block_problem`).
    """
    _check_hyperparameters(lam, radius, tol)
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose one of {SOLVERS}")
    if formulation == "dual":
        if X is None or basis is None or A is None:
            raise ValueError("formulation='dual' needs the constraint matrix A, the observed solutions X and bases")
        Theta, y, info = solve_dual_formulation(A, basis, X, Z, lam, radius, solver, threads=threads, absent=absent)
        info["duals"] = y
        info.setdefault("flows", None)
        return Theta, info
    if absent is not None:
        raise ValueError("absent columns are a dual-formulation option")
    if formulation != "basis":
        raise ValueError(f"unknown formulation {formulation!r}; choose one of {FORMULATIONS}")
    if solver in ("auto", "fast"):
        return solve_hinge_qp(M, Z, lam, radius=radius, tol=tol, A=A)
    return solve_hinge_qp_cvxpy(M, Z, lam, radius=radius)
