"""Benchmark: fitting MOM on shortest path (T = 1000, n = 40, d = 6) over the paper's lam grid.

Compares three solvers of the same QP (bases from x* alone, as MOM.fit builds them):
* fast: `MOM(solver="fast")`, the exact working-set method;
* cvxpy vectorized: `MOM(solver="cvxpy")`, one matrix constraint for all samples;
* cvxpy per sample: one cvxpy constraint per sample in a Python loop, as the released code
  built it (solved with Clarabel here; the released code used a commercial solver).
Objectives are the exact MOM objective evaluated at each solver's Theta. Then the dual
formulation is timed at T = 1000 on both problems.

Run:  .venv/bin/python benchmarks/mom_fit.py
"""

from __future__ import annotations

import time

import cvxpy as cp
import numpy as np

from mom_pipeline.allocator import keep_freed_memory
from mom_pipeline.lp import reduced_cost_operator
from mom_pipeline.methods.mom import MOM, mom_objective
from mom_pipeline.problems import generate_knapsack, generate_shortest_path

LAMBDAS = np.logspace(-6, 2, 9)
N_TRAIN = 1000


def per_sample_cvxpy(M: np.ndarray, Z: np.ndarray, lam: float) -> np.ndarray:
    """The released code's build: a Python loop adding one cvxpy constraint per sample."""
    T, K, n = M.shape
    d = Z.shape[1]
    Theta = cp.Variable((n, d))
    s = cp.Variable((T, K), nonneg=True)
    constraints = [M[t] @ Theta @ Z[t] >= 1 - s[t] for t in range(T)]
    problem = cp.Problem(cp.Minimize(0.5 * lam * cp.sum_squares(Theta) + cp.sum(s) / T), constraints)
    problem.solve(solver=cp.CLARABEL)
    return np.asarray(Theta.value)


def timed(function):
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def main() -> None:
    trial = generate_shortest_path(N_TRAIN, 0, degree=4, seed=0)
    Z = trial.train.Z
    X_star = trial.lp.solve(trial.train.C).x
    M, _ = reduced_cost_operator(trial.lp.A, trial.lp.basis_from_solution(X_star))
    print(f"shortest path: T = {Z.shape[0]}, n = {trial.lp.n}, d = {Z.shape[1]}, degree 4, no noise, "
          f"{M.shape[0] * M.shape[1]} hinge rows; bases from x* (support completion)")
    header = (f"{'lam':>8} | {'fast s':>7} {'vec s':>7} {'loop s':>7} | {'vec/fast':>8} {'loop/fast':>9} | "
              f"{'objective (fast)':>17} {'rel vs vec':>10} {'rel vs loop':>11} | rounds  W")
    print(header)
    print("-" * len(header))
    totals = np.zeros(3)
    worst = 0.0
    for lam in LAMBDAS:
        fast, t_fast = timed(lambda: MOM(lam=lam).fit(Z, X_star, lp=trial.lp))
        vec, t_vec = timed(lambda: MOM(lam=lam, solver="cvxpy").fit(Z, X_star, lp=trial.lp))
        # The per-sample build gets the bases from the same x*; its time includes building M.
        loop_theta, t_loop = timed(lambda: per_sample_cvxpy(
            reduced_cost_operator(trial.lp.A, trial.lp.basis_from_solution(X_star))[0], Z, lam))
        f_fast, f_vec = fast.objective_, vec.objective_
        f_loop = mom_objective(loop_theta, M, Z, lam)
        rel_vec, rel_loop = (f_fast - f_vec) / abs(f_vec), (f_fast - f_loop) / abs(f_loop)
        worst = max(worst, abs(rel_vec), abs(rel_loop))
        totals += (t_fast, t_vec, t_loop)
        info = fast.solver_info_
        print(f"{lam:8.0e} | {t_fast:7.3f} {t_vec:7.3f} {t_loop:7.3f} | {t_vec / t_fast:8.1f} {t_loop / t_fast:9.1f} | "
              f"{f_fast:17.10g} {rel_vec:10.1e} {rel_loop:11.1e} | {info['iterations']:>6} {info['working_set']:>3}")
    print("-" * len(header))
    print(f"{'total':>8} | {totals[0]:7.3f} {totals[1]:7.3f} {totals[2]:7.3f} | {totals[1] / totals[0]:8.1f} "
          f"{totals[2] / totals[0]:9.1f} | largest |relative objective difference| {worst:.1e}")

    print()
    print("dual formulation (no basis), T = 1000, lam = 1e-2, Clarabel on the whole sparse problem:")
    knapsack = generate_knapsack(N_TRAIN, 0, degree=2, eps_bar=0.1, eta_bar=1.0, prices="integer", seed=0)
    for label, problem in (("shortest path", trial), ("knapsack", knapsack)):
        X = problem.lp.solve(problem.train.C).x
        dual, t_dual = timed(lambda: MOM(lam=1e-2, formulation="dual").fit(problem.train.Z, X, lp=problem.lp))
        basis, t_basis = timed(lambda: MOM(lam=1e-2).fit(problem.train.Z, X, lp=problem.lp))
        print(f"  {label:>13}: dual {t_dual:6.2f} s (objective {dual.objective_:.6g}); "
              f"basis formulation, fast: {t_basis:5.2f} s (objective {basis.objective_:.6g})")


if __name__ == "__main__":
    keep_freed_memory()  # the malloc settings a Kedro run works under (mom_pipeline.allocator)
    main()
