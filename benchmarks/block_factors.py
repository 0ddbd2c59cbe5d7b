"""Benchmark: the block interior-point method's two block factorizations, in one run.

`block_hinge_qp(factorization="qr")` (every block by the complete QR of D^1/2 [N_t; I]) against
`factorization="normal"` (the normal matrices by a batched Cholesky factorization, each block
checked and the inaccurate ones by the QR: `block_factors.factor_normal`), on the dual
formulation's blocks of grid shortest paths (the paper's 5 x 5 grid with its 6 features at
T = 1,000, then larger grids with 8), one lambda. The 5 x 5 rows also time the basis formulation
(`MOM()` with the LP solver's bases), the reference of issue 50's target "x*-only fit <= 3x the
basis fit", and whole dual-formulation fits (`MOM(formulation="dual")`: the blocks built from
x*, the duals and flows afterwards) with each factorization, at one lambda and over the
nine-lambda grid of benchmarks/dual_fit.py. Times are CPU seconds of this
process (one BLAS thread), the best of REPEATS runs interleaved; steps are Newton steps.

`--sweep` fits instead the nine-lambda grid (warm-started, `MOM.fit_many`) with each factorization
on 48 small degenerate problems (shortest paths and knapsacks, degrees 1, 2, 4, 6, noise 0 and 0.5,
T = 60, 200, 500): the accurate retries after a stall, the fits that went to Clarabel, the
Newton steps, the CPU seconds and the largest objective difference.

Run:  .venv/bin/python benchmarks/block_factors.py [--repeats 3] [--sweep]
"""

from __future__ import annotations

import argparse
import itertools
import resource

import numpy as np
import threadpoolctl

import mom_pipeline.solvers.policy as policy
from mom_pipeline.methods.mom import MOM
from mom_pipeline.methods.mom_dual import _checked_block_shape
from mom_pipeline.methods.mom_dual_problem import dual_block_problem, dual_formulation_certificate
from mom_pipeline.problems import generate_knapsack, generate_shortest_path
from mom_pipeline.solvers.block_hinge_ipm import block_hinge_qp

LAM = 1e-2
LAMBDAS = np.logspace(-6, 2, 9)
LABELS = (("qr", "dual formulation, QR factors       "), ("normal", "dual formulation, normal factors   "))
#: (grid, T, features): the paper's shortest path, then larger grids (K + q = 32, 72, 162 rows a block).
CASES = (((5, 5), 1000, None), ((7, 7), 300, 8), ((10, 10), 100, 8))


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(function):
    """(function(), its CPU seconds)."""
    started = cpu_seconds()
    result = function()
    return result, cpu_seconds() - started


def keep_best(best: dict, name: str, result, seconds: float) -> None:
    """best[name] = (the latest result, the least seconds so far)."""
    best[name] = (result, min(seconds, best.get(name, (None, np.inf))[1]))


def trial_of(grid, T: int, features: int | None):
    options = dict(grid=grid) if features is None else dict(grid=grid, n_features=features)
    trial = generate_shortest_path(T, 0, degree=4, seed=0, **options)
    return trial, trial.lp.solve(trial.train.C)


def with_factorization(name: str, function):
    """function() with MOM's block method factoring every block the `name` way."""
    saved = policy.NORMAL_FACTOR_MAX_ROWS
    policy.NORMAL_FACTOR_MAX_ROWS = 10**9 if name == "normal" else 0
    try:
        return function()
    finally:
        policy.NORMAL_FACTOR_MAX_ROWS = saved


def block_rows(grid, T, features, repeats: int) -> None:
    trial, solution = trial_of(grid, T, features)
    A = np.asarray(trial.lp.A, dtype=float)
    X, Z = solution.x, trial.train.Z
    basis = trial.lp.basis_from_solution(X)
    subspace, _ = _checked_block_shape(A, X, Z.shape[1], 1)
    problem = dual_block_problem(A, basis, X, Z, subspace)
    T, K, n = problem.M.shape
    q = problem.rows_on_u.shape[2]
    scaled_lam = LAM / problem.sigma**2
    results = {}
    for _ in range(repeats):  # interleaved, so that a change of the machine's load hits both
        for name in ("qr", "normal"):
            keep_best(results, name, *timed(lambda: block_hinge_qp(problem.M, problem.rows_on_u, problem.Z, scaled_lam,
                                                                   1.0 / T, factorization=name)))
    (qr, t_qr), (normal, t_normal) = results["qr"], results["normal"]
    difference = abs(normal.objective - qr.objective) / abs(qr.objective)
    columns = [f"{seconds:8.3f} {result.iterations:>5} {1e3 * seconds / result.iterations:8.1f}"
               for result, seconds in ((qr, t_qr), (normal, t_normal))]
    print(f"{grid[0]}x{grid[1]:<3} {T:>6} {K + q:>5} {n:>4} | {columns[0]} | {columns[1]} | {t_qr / t_normal:6.2f}x "
          f"{difference:9.1e}")


def whole_fits(repeats: int) -> None:
    trial, solution = trial_of((5, 5), 1000, None)
    Z, X = trial.train.Z, solution.x
    rows, grids = {}, {}
    for _ in range(repeats):
        for name in ("basis", "qr", "normal"):
            options = dict(lp=trial.lp, basis=solution.basis) if name == "basis" else dict(lp=trial.lp)
            formulation = "basis" if name == "basis" else "dual"
            keep_best(rows, name, *timed(lambda: with_factorization(
                name, lambda: MOM(lam=LAM, formulation=formulation).fit(Z, X, **options))))
            keep_best(grids, name, *timed(lambda: with_factorization(name, lambda: MOM.fit_many(
                [MOM(lam=lam, formulation=formulation) for lam in LAMBDAS], Z, X, **options))))
    basis_seconds = rows["basis"][1]
    print(f"\nwhole fits, 5 x 5 grid, T = 1000, lambda = {LAM:g} (CPU s, best of {repeats}):")
    print(f"  basis formulation (LP bases)          {basis_seconds:7.3f} s   1.0x")
    for name, label in LABELS:
        model, seconds = rows[name]
        gap = dual_formulation_certificate(model.coef_, model.dual_, model.flows_, trial.lp.A, X, Z,
                                           LAM)["relative_gap"]
        print(f"  {label}   {seconds:7.3f} s {seconds / basis_seconds:5.1f}x  ({model.n_iter_} steps, "
              f"{1e3 * seconds / model.n_iter_:.1f} ms CPU a step with the set-up, objective "
              f"{model.objective_:.12g}, certified gap {gap:.1e})")
    grid_basis = grids["basis"][1]
    print(f"the nine-lambda grid 1e-6..1e2 at once (`MOM.fit_many`, warm-started; CPU s, best of {repeats}):")
    print(f"  basis formulation (LP bases)          {grid_basis:7.3f} s   1.0x")
    for name, label in LABELS:
        models, seconds = grids[name]
        steps = sum(model.n_iter_ for model in models)
        difference = max(abs(model.objective_ - other.objective_) / abs(other.objective_)
                         for model, other in zip(models, grids["qr"][0]))
        print(f"  {label}   {seconds:7.3f} s {seconds / grid_basis:5.1f}x  ({steps} steps, "
              f"{1e3 * seconds / steps:.1f} ms CPU a step with the set-up, largest objective difference to the QR "
              f"factors {difference:.1e})")
    print("  (target of issue 50: dual / basis <= 3x)")


def sweep() -> None:
    totals = {name: np.zeros(4) for name in ("qr", "normal")}
    worst = 0.0
    print("nine-lambda grids, retries / Clarabel fits / Newton steps / CPU s, QR factors then normal factors")
    for problem, degree, noise, T in itertools.product(("shortest_path", "knapsack"), (1, 2, 4, 6), (0.0, 0.5),
                                                       (60, 200, 500)):
        if problem == "shortest_path":
            trial = generate_shortest_path(T, 0, degree=degree, eps_bar=noise, seed=11)
        else:
            trial = generate_knapsack(T, 0, degree=degree, eps_bar=noise, eta_bar=1.0, seed=11)
        X = trial.lp.solve(trial.train.C).x
        fits = {}
        for name in ("qr", "normal"):
            models, seconds = timed(lambda: with_factorization(name, lambda: MOM.fit_many(
                [MOM(lam=lam, formulation="dual") for lam in LAMBDAS], trial.train.Z, X, lp=trial.lp)))
            counts = np.array([sum("block_ipm_retry" in model.solver_info_ for model in models),
                               sum(model.solver_info_["solver"] == "clarabel" for model in models),
                               sum(model.n_iter_ for model in models), seconds])
            totals[name] += counts
            fits[name] = (models, counts)
        difference = max(abs(one.objective_ - other.objective_) / max(abs(other.objective_), 1e-12)
                         for one, other in zip(fits["normal"][0], fits["qr"][0]))
        worst = max(worst, difference)
        print(f"{problem:>13} degree {degree} noise {noise:.1f} T {T:>3} | "
              + " | ".join(f"{int(c[0])} {int(c[1])} {int(c[2]):>4} {c[3]:6.2f}" for _, c in fits.values())
              + f" | {difference:.1e}")
    print("totals | " + " | ".join(f"{name}: {int(c[0])} retries, {int(c[1])} Clarabel, {int(c[2])} steps, "
                                   f"{c[3]:.1f} s" for name, c in totals.items())
          + f" | largest objective difference {worst:.1e}")


def main(repeats: int) -> None:
    print(f"block factorizations of the dual formulation, lambda = {LAM:g}, CPU seconds (best of {repeats})")
    header = (f"{'grid':<6} {'T':>6} {'K+q':>5} {'n':>4} | {'QR s':>8} {'steps':>5} {'ms/step':>8} | {'normal s':>8} "
              f"{'steps':>5} {'ms/step':>8} | {'gain':>7} {'obj. diff':>9}")
    print(header)
    print("-" * len(header))
    for grid, T, features in CASES:
        block_rows(grid, T, features, repeats)
    whole_fits(repeats)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sweep", action="store_true", help="the 48 small degenerate grids instead")
    arguments = parser.parse_args()
    with threadpoolctl.threadpool_limits(1):
        sweep() if arguments.sweep else main(arguments.repeats)
