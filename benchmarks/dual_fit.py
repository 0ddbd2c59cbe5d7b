"""Benchmark: the dual formulation of MOM (no basis, x* alone) against the basis formulation.

The paper's shortest path (T = 1000, degree 4, 5 x 5 grid), the 9-value lambda grid 1e-6..1e2.
* basis: `MOM(formulation="basis")` with the LP solver's bases (the reference of the ratio);
* dual: `MOM(formulation="dual")`, the block interior-point method (`solvers.block_hinge_ipm`);
both fitted once per lambda (`fit`) and over the whole grid at once (`MOM.fit_many`: for the
dual formulation one block problem solved from the largest lambda down, warm-started; the grid
also with n_jobs=-1, the block method's Newton steps on every core). At one
lambda the dual formulation is also solved whole by Clarabel (`solver="cvxpy"`, the former
default), and the block method's duality gap is checked with its own flows
(`mom_dual_problem.dual_formulation_certificate`). The target is dual / basis <= 3 over the grid.

Run:  .venv/bin/python benchmarks/dual_fit.py
"""

from __future__ import annotations

import time

import numpy as np

from mom_pipeline.allocator import keep_freed_memory
from mom_pipeline.methods.mom import MOM
from mom_pipeline.methods.mom_dual import threads_of
from mom_pipeline.methods.mom_dual_problem import dual_formulation_certificate
from mom_pipeline.problems import generate_shortest_path

LAMBDAS = np.logspace(-6, 2, 9)


def timed(function):
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def main() -> None:
    trial = generate_shortest_path(1000, 0, degree=4, seed=0)
    Z = trial.train.Z
    solution = trial.lp.solve(trial.train.C)
    print(f"shortest path: T = {Z.shape[0]}, n = {trial.lp.n}, d = {Z.shape[1]}, degree 4; lambda grid 1e-6..1e2")
    header = (f"{'lam':>8} | {'basis s':>8} {'dual s':>8} {'dual/basis':>10} | {'dual iters':>10} {'dual solver':>11} "
              f"| {'grid iters':>10} {'rel. gap':>9}")
    print(header)
    print("-" * len(header))
    basis_grid, t_basis_grid = timed(lambda: MOM.fit_many([MOM(lam=lam) for lam in LAMBDAS], Z, solution.x,
                                                          lp=trial.lp, basis=solution.basis))
    dual_grid, t_dual_grid = timed(lambda: MOM.fit_many([MOM(lam=lam, formulation="dual") for lam in LAMBDAS],
                                                        Z, solution.x, lp=trial.lp))
    threaded_grid, t_threaded_grid = timed(lambda: MOM.fit_many(
        [MOM(lam=lam, formulation="dual", n_jobs=-1) for lam in LAMBDAS], Z, solution.x, lp=trial.lp))
    assert all(np.array_equal(one.coef_, other.coef_) for one, other in zip(dual_grid, threaded_grid))
    totals = np.zeros(2)
    for lam, on_grid in zip(LAMBDAS, dual_grid):
        _, t_basis = timed(lambda: MOM(lam=lam).fit(Z, solution.x, lp=trial.lp, basis=solution.basis))
        dual, t_dual = timed(lambda: MOM(lam=lam, formulation="dual").fit(Z, solution.x, lp=trial.lp))
        totals += (t_basis, t_dual)
        gap = (dual_formulation_certificate(on_grid.coef_, on_grid.dual_, on_grid.flows_, trial.lp.A, solution.x, Z,
                                            lam)["relative_gap"] if on_grid.flows_ is not None else float("nan"))
        print(f"{lam:8.0e} | {t_basis:8.3f} {t_dual:8.3f} {t_dual / t_basis:10.1f} | {dual.n_iter_:>10} "
              f"{dual.solver_info_['solver']:>11} | {on_grid.n_iter_:>10} {gap:9.1e}")
    print("-" * len(header))
    print(f"{'fit':>8} | {totals[0]:8.3f} {totals[1]:8.3f} {totals[1] / totals[0]:10.1f} |  one fit per lambda")
    print(f"{'fit_many':>8} | {t_basis_grid:8.3f} {t_dual_grid:8.3f} {t_dual_grid / t_basis_grid:10.1f} |  the grid at "
          f"once: dual/basis ratio over the grid (target <= 3)")
    print(f"{'threads':>8} | {t_basis_grid:8.3f} {t_threaded_grid:8.3f} {t_threaded_grid / t_basis_grid:10.1f} |  the "
          f"grid at once, the dual formulation on {threads_of(-1)} threads (n_jobs=-1; the same solutions bit for bit)")
    lam = 1e-2
    block, t_block = timed(lambda: MOM(lam=lam, formulation="dual").fit(Z, solution.x, lp=trial.lp))
    whole, t_whole = timed(lambda: MOM(lam=lam, formulation="dual", solver="cvxpy").fit(Z, solution.x, lp=trial.lp))
    print(f"lam = {lam:g}: block method {t_block:.2f} s (objective {block.objective_:.10g}); Clarabel on the whole "
          f"problem {t_whole:.2f} s (objective {whole.objective_:.10g}), {t_whole / t_block:.1f}x slower, relative "
          f"difference {(block.objective_ - whole.objective_) / abs(whole.objective_):.1e}")


if __name__ == "__main__":
    keep_freed_memory()  # the malloc settings a Kedro run works under (mom_pipeline.allocator)
    main()
