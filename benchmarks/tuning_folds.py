"""Benchmark: the inverse pipeline's cost-free lambda tuning, folds one after the other against
folds fitted at once.

`methods.cost_free_tuning.validation_curve` (4 folds, the 9-value lambda grid 1e-6..1e2, dual
formulation) on the paper's shortest path at degree 4, for a few sizes T:
* in turn: `n_jobs=None`, the folds one after the other on one thread (the reference);
* in turn, steps shared: `n_jobs=-1` with folds never fitted at once (the former behaviour:
  each fold's Newton steps on every core when they are large enough,
  `solvers.policy.block_ipm_threads`);
* at once: `n_jobs=-1`, as the inverse pipeline's parameters ask; the folds large enough
  (`solvers.policy.tuning_fold_threads`) are fitted at once, one thread each.
The three are run in alternation, `--rounds` times each, and the curves must be identical (every
score to the last bit). Printed: the seconds of each run, and the best of each against the best
at once.

Run:  .venv/bin/python benchmarks/tuning_folds.py [--sizes 200 1000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mom_pipeline.allocator import keep_freed_memory
from mom_pipeline.methods.cost_free_tuning import fold_threads, kfold_indices, validation_curve
from mom_pipeline.problems import generate_shortest_path
from mom_pipeline.solvers import policy

LAMBDAS = np.logspace(-6, 2, 9)  # as inverse.tuning.lambdas in conf/base/parameters_inverse.yml
N_FOLDS = 4
SCORES = ["lam", "reproduced_share", "reproduced_share_std", "heldout_hinge", "chosen"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(f"{'T':>6} {'folds at once':>13} | {'in turn s':>15} | {'in turn, shared s':>17} | {'at once s':>15} | "
          f"{'in turn / at once':>17} | {'shared / at once':>16} | curves")
    for T in args.sizes:
        trial = generate_shortest_path(T, 0, degree=4, seed=0)
        Z, lp = trial.train.Z, trial.lp
        X = lp.solve(trial.train.C).x
        at_once_threads = fold_threads({"formulation": "dual", "n_jobs": -1}, Z, X, lp, kfold_indices(T, N_FOLDS, 0))
        runs = {"in turn": (None, policy.TUNING_FOLD_WORK), "shared": (-1, float("inf")),
                "at once": (-1, policy.TUNING_FOLD_WORK)}
        seconds: dict = {name: [] for name in runs}
        curves: dict = {}
        for _ in range(args.rounds):
            for name, (n_jobs, fold_work) in runs.items():
                kept, policy.TUNING_FOLD_WORK = policy.TUNING_FOLD_WORK, fold_work
                try:
                    started = time.perf_counter()
                    curves[name] = validation_curve({"formulation": "dual", "n_jobs": n_jobs}, Z, X, lp, LAMBDAS,
                                                    n_folds=N_FOLDS, seed=0)
                    seconds[name].append(time.perf_counter() - started)
                finally:
                    policy.TUNING_FOLD_WORK = kept
        same = all(curves[name][SCORES].equals(curves["in turn"][SCORES]) for name in runs)
        best = {name: min(values) for name, values in seconds.items()}
        shown = {name: " / ".join(f"{value:.2f}" for value in values) for name, values in seconds.items()}
        print(f"{T:>6} {at_once_threads:>13} | {shown['in turn']:>15} | {shown['shared']:>17} | {shown['at once']:>15} | "
              f"{best['in turn'] / best['at once']:>16.2f}x | {best['shared'] / best['at once']:>15.2f}x | "
              f"{'identical' if same else 'DIFFER'}", flush=True)
        if not same:
            raise SystemExit(f"T = {T}: the curves differ")


if __name__ == "__main__":
    keep_freed_memory()  # the malloc settings a Kedro run works under (mom_pipeline.allocator)
    main()
