"""Scale-up benchmark of inverse LP from x* alone: the dual-formulation MOM fit on grid shortest paths.

For each grid (the paper's 5 x 5, 10 x 10, and 20 x 20 = 760 arcs) with d = 8 features and
T = 1,000, 10,000, 100,000 observations (costs of degree 4, lambda = 1e-2), one fit runs in a
child process (fresh memory, peak RSS measured there) under a wall-clock limit; the table
gives the whole fit and the block interior-point method's part of it (the rest: bases
completed from x*, reduced-cost operators, duals). A size is not run when its estimated
memory (`solvers.policy.block_ipm_bytes`) exceeds the budget or its projected time exceeds
the limit: the previous size's time scaled linearly in T, or on the 760-arc grid, where no
fit fits the limit, ~20 Newton steps at the per-block cost of one step timed at T = 10 and 20
(split into the per-sample elimination and the Theta system's Cholesky factorization, which
shows where the time goes). Growth exponents in T come from the sizes that ran.

Usage: python benchmarks/inverse_scale.py [--budget-gb 16] [--limit-s 240]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

from mom_pipeline.allocator import keep_freed_memory
from mom_pipeline.methods.mom_dual import threads_of
from mom_pipeline.solvers.policy import block_ipm_bytes

GRIDS = ((5, 5), (10, 10), (20, 20))
SIZES = (1_000, 10_000, 100_000)
N_FEATURES = 8
LAM = 1e-2


def shapes(grid: tuple[int, int]) -> tuple[int, int, int]:
    """(n arcs, K non-basic rows, q free reduced costs) of a corner-to-corner route."""
    h, w = grid
    n = h * (w - 1) + w * (h - 1)
    m = h * w - 1
    route = h + w - 2
    return n, n - m, m - route


def estimated_bytes(grid, T: int, d: int = N_FEATURES) -> float:
    """The estimated peak of a fit by the block method on every core (`solvers.policy.block_ipm_bytes`)."""
    n, K, q = shapes(grid)
    # Theta works on the null space of the grid's incidence matrix: n - rank(A) = K costs.
    return block_ipm_bytes(T, K, q, n, d, n - K, threads_of(-1), r=K)


def peak_gigabytes() -> float:
    """This process's peak resident memory (VmHWM: unlike ru_maxrss, not inherited from the
    parent at fork, which holds the Theta systems of the Newton-step timing)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**20  # kB -> GiB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def worker(grid, T: int, budget_gb: float) -> dict:
    import mom_pipeline.solvers.policy as policy
    from mom_pipeline.methods.mom import MOM
    from mom_pipeline.problems import generate_shortest_path

    # The block method up to this benchmark's memory budget, not the package's default (half of
    # the machine's memory, `policy.block_ipm_budget`), so that the table does not depend on the machine.
    policy.BLOCK_IPM_MAX_BYTES = budget_gb * 2**30

    trial = generate_shortest_path(T, 0, degree=4, grid=grid, n_features=N_FEATURES, seed=0)
    X = trial.lp.solve(trial.train.C, need_basis=False).x
    started = time.perf_counter()
    model = MOM(lam=LAM, formulation="dual", n_jobs=-1).fit(trial.train.Z, X, lp=trial.lp)
    seconds = time.perf_counter() - started
    peak = peak_gigabytes()
    # The rest of the fit: bases completed from x*, reduced-cost operators, duals, flows.
    solve = model.solver_info_.get("solve_seconds", float("nan"))
    return dict(seconds=seconds, solve_seconds=solve, peak_gb=peak, iterations=int(model.n_iter_),
                solver=model.solver_info_["solver"])


def newton_step_parts(grid, T: int) -> dict:
    """One Newton step at T observations: seconds of the per-sample elimination and of the Schur factorization."""
    import scipy.linalg

    from mom_pipeline.solvers.block_hinge_ipm import BlockHingeRows, _newton_solver

    n, K, q = shapes(grid)
    rng = np.random.default_rng(0)
    # The block method's rows act on the K costs of the incidence matrix's null space
    # (`mom_problem.constraint_null_space`), not on all n arcs.
    rows = BlockHingeRows(rng.normal(size=(T, K, K)), rng.normal(size=(T, K, q)), rng.normal(size=(T, N_FEATURES)))
    e = np.exp(rng.normal(size=(T, K + q)))
    started = time.perf_counter()
    _newton_solver(rows, 1e-2, e)
    total = time.perf_counter() - started
    p = K * N_FEATURES
    schur = rng.normal(size=(p, p)) / np.sqrt(p)
    schur = schur @ schur.T + np.eye(p)
    started = time.perf_counter()
    scipy.linalg.cho_factor(schur)
    factor = time.perf_counter() - started
    return dict(T=T, step_seconds=total, schur_factor_seconds=factor, schur_unknowns=p, schur_gb=8 * p * p / 2**30)


def run_child(grid, T: int, limit: float, budget_gb: float) -> dict:
    command = [sys.executable, __file__, "--worker", f"{grid[0]}x{grid[1]}", str(T), str(budget_gb)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return dict(status=f"over {limit:.0f} s")
    if result.returncode != 0:
        return dict(status=f"failed: {(result.stderr.strip().splitlines() or ['killed'])[-1][:80]}")
    return dict(status="ran", **json.loads(result.stdout.strip().splitlines()[-1]))


def seconds_per_block_step(grid) -> tuple[float, float, list[dict]]:
    """Seconds of one Newton step on `grid` per block (the per-sample elimination and the Schur
    sum: the step timed at T = 10 and 20 minus a Cholesky factorization of the Theta system,
    per block, from the larger T) and of that factorization (independent of T)."""
    steps = [newton_step_parts(grid, T) for T in (10, 20)]
    last = steps[-1]
    return (last["step_seconds"] - last["schur_factor_seconds"]) / last["T"], last["schur_factor_seconds"], steps


def main(budget_gb: float, limit: float) -> None:
    print(f"inverse LP from x* alone: dual-formulation MOM (n_jobs=-1: {threads_of(-1)} threads), d = {N_FEATURES}, "
          f"lambda = {LAM:g}, degree 4; "
          f"budget {budget_gb:g} GB, {limit:.0f} s per fit")
    # The largest grid first: one Newton step at tiny T, so that its fits can be projected.
    per_block, factor, steps = seconds_per_block_step(GRIDS[-1])
    header = (f"{'grid':>7} {'arcs':>5} {'K':>4} {'q':>4} {'T':>7} | {'est. GB':>8} | {'fit s':>8} {'IPM s':>8} "
              f"{'peak GB':>8} {'iters':>5} | status")
    print(header)
    print("-" * len(header))
    for grid in GRIDS:
        n, K, q = shapes(grid)
        measured, over = [], None
        for T in SIZES:
            estimate = estimated_bytes(grid, T) / 2**30
            if measured:
                projected = measured[-1][1] * T / measured[-1][0]
            else:  # ~20 Newton steps per fit (measured on the smaller grids at lambda = 1e-2)
                projected = 20 * (per_block * T + factor) if grid == GRIDS[-1] else 0.0
            if over is not None:
                row = dict(status=f"not run: T = {over} already over {limit:.0f} s")
            elif estimate > budget_gb:
                row = dict(status=f"not run: estimated {estimate:.1f} GB > {budget_gb:g} GB")
            elif projected > limit:
                row = dict(status=f"not run: projected {projected:,.0f} s > {limit:.0f} s")
            else:
                row = run_child(grid, T, limit, budget_gb)
            if row["status"] == "ran":
                measured.append((T, row["seconds"]))
            elif row["status"].startswith("over"):
                over = T
            print(f"{grid[0]:>3}x{grid[1]:<3} {n:>5} {K:>4} {q:>4} {T:>7} | {estimate:8.2f} | "
                  f"{row.get('seconds', float('nan')):8.2f} {row.get('solve_seconds', float('nan')):8.2f} "
                  f"{row.get('peak_gb', float('nan')):8.2f} "
                  f"{row.get('iterations', ''):>5} | {row['status']}", flush=True)
        if len(measured) >= 2:
            sizes, seconds = np.log([m[0] for m in measured]), np.log([m[1] for m in measured])
            print(f"        growth exponent in T on the {grid[0]}x{grid[1]} grid: "
                  f"{np.polyfit(sizes, seconds, 1)[0]:.2f} (fit time ~ T^k over the sizes that ran)")
    print()
    print("where the time goes on the 760-arc grid: one Newton step of the block method")
    for parts in steps:
        print(f"  T = {parts['T']:>3}: step {parts['step_seconds']:6.2f} s, of which Schur Cholesky "
              f"({parts['schur_unknowns']:,} unknowns, {parts['schur_gb']:.2f} GB) {parts['schur_factor_seconds']:5.2f} s")
    for T in SIZES[:2]:
        step = per_block * T + factor
        print(f"  projected at T = {T:,}: {step:,.0f} s per Newton step ({per_block:.2f} s per block + {factor:.1f} s "
              f"for the Theta Cholesky), ~{20 * step / 3600:,.1f} h per fit of ~20 steps; "
              f"{estimated_bytes(GRIDS[-1], T) / 2**30:,.1f} GB")


if __name__ == "__main__":
    keep_freed_memory()  # the malloc settings a Kedro run works under (mom_pipeline.allocator)
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        h, w = (int(v) for v in sys.argv[2].split("x"))
        print(json.dumps(worker((h, w), int(sys.argv[3]), float(sys.argv[4]))))
    else:
        parser = argparse.ArgumentParser()
        parser.add_argument("--budget-gb", type=float, default=16.0)
        parser.add_argument("--limit-s", type=float, default=240.0)
        arguments = parser.parse_args()
        main(arguments.budget_gb, arguments.limit_s)
