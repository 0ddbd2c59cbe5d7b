"""Benchmark of the methods' hot paths, each against a reference measured in the same run.

* SPO+: one epoch (T/5 mini-batches of 5) with the batched oracle vs the same epoch with a
  per-sample loop of HiGHS solves (what a generic implementation does).
* SPO+ tuning grid (2 lam x 5 step sizes, 2000 steps, the experiments' grid): the ten cells
  fitted in lockstep (`SPOPlus.fit_many`, one oracle call a step for all cells) vs one by one.
* Kernel MOM at T = 500 (knapsack, degree 4): exact kernel features vs Nystroem (50 components).
* FTRL-MOM over 1000 online steps (knapsack): re-solving every step vs every 10 steps.
Usage: python benchmarks/methods_speed.py
"""

from __future__ import annotations

import time

import numpy as np

from mom_pipeline.allocator import keep_freed_memory
from mom_pipeline.lp import StandardFormLP, solve_lp_batch
from mom_pipeline.methods import FTRLMOM, KernelMOM, SPOPlus
from mom_pipeline.problems import generate_knapsack, generate_shortest_path


class HighsLoopLP(StandardFormLP):
    """The same LP family solved one sample at a time with HiGHS (the reference)."""

    def solve(self, C, method: str = "auto", need_basis: bool = True):
        solutions = [solve_lp_batch(self.A, self.b, c[None]) for c in np.atleast_2d(C)]
        from mom_pipeline.lp import LPSolution

        return LPSolution(x=np.vstack([s.x for s in solutions]), objective=np.concatenate([s.objective for s in solutions]),
                          basis=np.vstack([s.basis for s in solutions]))


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    print("SPO+, one epoch of mini-batches of 5 (T = 1000)")
    for name, trial in {"shortest path": generate_shortest_path(1000, 0, degree=4, seed=0),
                        "knapsack": generate_knapsack(1000, 0, degree=2, seed=0)}.items():
        X = trial.lp.solve(trial.train.C).x
        loop_lp = HighsLoopLP(A=trial.lp.A, b=trial.lp.b)
        fast = timed(lambda: SPOPlus(n_steps=200).fit(trial.train.Z, X, lp=trial.lp, C=trial.train.C))
        slow = timed(lambda: SPOPlus(n_steps=200).fit(trial.train.Z, X, lp=loop_lp, C=trial.train.C))
        print(f"  {name:14s} batched oracle {fast:7.3f} s   per-sample HiGHS {slow:7.3f} s   ratio {slow / fast:6.1f}x")

    print("SPO+ tuning grid, 10 cells x 2000 steps of batches of 5 (T = 750, the experiments' training quarter split)")
    for name, trial in {"shortest path": generate_shortest_path(750, 0, degree=4, seed=1),
                        "knapsack": generate_knapsack(750, 0, degree=2, seed=1)}.items():
        X = trial.lp.solve(trial.train.C).x
        cells = [dict(lam=lam, step_size=step) for lam in (1e-6, 1e-2) for step in (1e-3, 1e-2, 1e-1, 1.0, 10.0)]
        separate = timed(lambda: [SPOPlus(**c).fit(trial.train.Z, X, lp=trial.lp, C=trial.train.C) for c in cells])
        together = timed(lambda: SPOPlus.fit_many([SPOPlus(**c) for c in cells], trial.train.Z, X, lp=trial.lp,
                                                  C=trial.train.C))
        print(f"  {name:14s} lockstep {together:7.3f} s   one by one {separate:7.3f} s   ratio {separate / together:5.1f}x")

    print("Kernel MOM fit, knapsack degree 4, T = 500, lam = 1e-2")
    trial = generate_knapsack(500, 0, degree=4, seed=0)
    sol = trial.lp.solve(trial.train.C)
    for kernel in ("poly", "rbf"):
        exact = timed(lambda: KernelMOM(kernel=kernel, lam=1e-2).fit(trial.train.Z, sol.x, lp=trial.lp, basis=sol.basis))
        nystroem = timed(lambda: KernelMOM(kernel=kernel, lam=1e-2, n_components=50).fit(
            trial.train.Z, sol.x, lp=trial.lp, basis=sol.basis))
        print(f"  {kernel:5s} exact kernel {exact:7.3f} s   Nystroem-50 {nystroem:7.3f} s   ratio {exact / nystroem:5.1f}x")

    print("FTRL-MOM, 1000 online steps (knapsack, separable, prices U[0,1])")
    trial = generate_knapsack(1000, 0, degree=1, prices="uniform", seed=0)
    sol = trial.lp.solve(trial.train.C)
    every = timed(lambda: FTRLMOM(refit_every=1).fit(trial.train.Z, sol.x, lp=trial.lp, basis=sol.basis))
    tenth = timed(lambda: FTRLMOM(refit_every=10, dense_steps=100).fit(trial.train.Z, sol.x, lp=trial.lp,
                                                                       basis=sol.basis))
    print(f"  refit every step {every:7.2f} s   every 10 steps after 100 {tenth:7.2f} s   ratio {every / tenth:5.1f}x")


if __name__ == "__main__":
    keep_freed_memory()  # the malloc settings a Kedro run works under (mom_pipeline.allocator)
    main()
