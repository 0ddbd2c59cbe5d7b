"""Clarabel, the mature interior-point conic solver, behind one call that retries and fails loudly."""

from __future__ import annotations

import clarabel
import numpy as np
import scipy.sparse as sp

from .result import SolverResult


def clarabel_settings(max_iter: int = 200, tol: float | None = None) -> clarabel.DefaultSettings:
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.max_iter = max_iter
    settings.max_threads = 1  # deterministic results (and no spinning threads on a busy machine)
    if tol is not None:  # the gap and feasibility tolerances (Clarabel's defaults: 1e-8)
        settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = tol
    return settings


def solve_clarabel(P, q, A, b, cones, what: str, tol: float | None = None) -> SolverResult:
    """min 0.5 x'Px + q'x s.t. b - Ax in cones; raises when Clarabel does not solve it.

    A run that stalls (InsufficientProgress, an ill-conditioned KKT system) is retried
    without equilibration and then with more iterations before giving up. tol: Clarabel's
    gap and feasibility tolerances, None for its defaults (1e-8, relative to its scaled problem:
    on badly scaled problems the unscaled objective can be much further off, see
    `hinge_working_set.RESTRICTED_CLARABEL_TOL`).
    Returns a `SolverResult`: solution x, Clarabel's objective and iterations, status "optimal"
    ("optimal_inaccurate" for AlmostSolved), path "clarabel" (with the retry: "clarabel_retry_1",
    "_2"), certificate Clarabel's primal and dual residuals.
    """
    P, A = sp.triu(P, format="csc"), sp.csc_matrix(A)
    status = "not run"
    for attempt in range(3):
        settings = clarabel_settings(200 if attempt < 2 else 1000, tol)
        if attempt >= 1:
            settings.equilibrate_enable = False
        solution = clarabel.DefaultSolver(P, q, A, b, cones, settings).solve()
        status = str(solution.status)
        if status in ("Solved", "AlmostSolved"):
            return SolverResult(np.asarray(solution.x), objective=float(solution.obj_val),
                                iterations=int(solution.iterations),
                                status="optimal" if status == "Solved" else "optimal_inaccurate",
                                path="clarabel" if attempt == 0 else f"clarabel_retry_{attempt}",
                                certificate=dict(primal_residual=float(solution.r_prim),
                                                 dual_residual=float(solution.r_dual)))
    raise RuntimeError(f"Clarabel did not solve the {what} (status {status})")


def ball_block(n_vars: int, first: int, size: int, radius: float):
    """Rows and rhs of the cone constraint ||x[first:first+size]||_2 <= radius."""
    block = sp.hstack(
        [sp.csr_matrix((size, first)), -sp.identity(size, format="csr"),
         sp.csr_matrix((size, n_vars - first - size))], format="csr")
    A = sp.vstack([sp.csr_matrix((1, n_vars)), block], format="csr")
    b = np.concatenate([[radius], np.zeros(size)])
    return A, b, clarabel.SecondOrderConeT(size + 1)
