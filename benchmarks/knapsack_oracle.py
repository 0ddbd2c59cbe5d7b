"""CPU time of the two-resource knapsack oracle against the general simplex, on the cost batches
the DFL methods ask it for.

The batches are recorded from short fits (--epochs) of the benchmark's gradient methods and
grids on one trial of the benchmark's knapsack (T = --samples, degree 4, noise 0.5); then each
batch is solved as the methods ask, by `MultiKnapsack.solve(C, need_basis=False)` (the
closed-form simplex, the general one for what it does not certify), and by
`MultiKnapsack._general_simplex` alone (which always builds the basis, as the oracle did), interleaved batch by batch,
--repeats times, in CPU seconds of this process (`time.process_time`, one BLAS thread).
Usage: OMP_NUM_THREADS=1 python benchmarks/knapsack_oracle.py [--samples 1000] [--epochs 3]
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from mom_pipeline.blas_threads import one_blas_thread
from mom_pipeline.lp import MultiKnapsack
from mom_pipeline.lp.two_resource_simplex import solve_two_resource
from mom_pipeline.methods.dfl import DBB, PFYL, SPOPlusAdam
from mom_pipeline.methods.perturbed import AIMLE, IMLE, DPO
from mom_pipeline.methods.solution_pool import ListwiseLTR
from mom_pipeline.problems import generate_multi_knapsack

# The benchmark's grids (conf/base/parameters_dfl_benchmark.yml) of the methods that call the oracle most.
METHODS = {"PFYL": (PFYL, {"sigma": [0.1, 1.0], "step_size": [0.01, 0.05]}),
           "DPO": (DPO, {"sigma": [0.1, 1.0], "step_size": [0.01, 0.05]}),
           "I-MLE": (IMLE, {"sigma": [0.1, 1.0], "step_size": [0.01, 0.05]}),
           "AI-MLE": (AIMLE, {"sigma": [0.1, 1.0], "step_size": [0.01, 0.05]}),
           "DBB": (DBB, {"lam_interp": [1.0, 10.0], "step_size": [0.01, 0.05]}),
           "SPO+": (SPOPlusAdam, {"step_size": [0.01, 0.05]}),
           "LTR listwise": (ListwiseLTR, {"temperature": [0.1, 1.0], "step_size": [0.01, 0.05]})}


def recorded_batches(samples: int, epochs: int) -> tuple[MultiKnapsack, dict]:
    """{method: [cost batches]} the oracle is called with during the methods' grid fits."""
    trial = generate_multi_knapsack(samples, 0, degree=4, eps_bar=0.5, seed=1515)
    knapsack = trial.lp.structure
    batches: dict[str, list] = {}
    solve = MultiKnapsack.solve
    current = [""]

    def recording(self, C, need_basis=True):
        batches.setdefault(current[0], []).append(np.array(C))
        return solve(self, C, need_basis)

    X_star = trial.lp.solve(trial.train.C, need_basis=False).x
    MultiKnapsack.solve = recording
    try:
        for name, (cls, grid) in METHODS.items():
            current[0] = name
            models = [cls(batch_size=32, n_epochs=epochs, **dict(zip(grid, values)))
                      for values in itertools.product(*grid.values())]
            cls.fit_many(models, trial.train.Z, X_star, lp=trial.lp, C=trial.train.C)
    finally:
        MultiKnapsack.solve = solve
    return knapsack, batches


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    knapsack, batches = recorded_batches(args.samples, args.epochs)
    print(f"{'method':14s} {'batches':>7s} {'rows':>8s} {'certified':>9s} {'general CPU-s':>13s} "
          f"{'new CPU-s':>9s} {'ratio':>6s}")
    totals = np.zeros(2)
    with one_blas_thread():
        for name, calls in batches.items():
            seconds = np.zeros(2)
            for _ in range(args.repeats):
                for C in calls:
                    for i, solve in enumerate((knapsack._general_simplex, knapsack.solve)):
                        started = time.process_time()
                        solve(C, need_basis=False) if i else solve(C)
                        seconds[i] += time.process_time() - started
            rows = sum(len(C) for C in calls)
            certified = sum(solve_two_resource(knapsack.item_costs(C), knapsack.weights,
                                               knapsack.capacities)[0].sum() for C in calls)
            totals += seconds
            print(f"{name:14s} {len(calls):7d} {rows:8d} {certified / rows:9.4f} {seconds[0]:13.2f} "
                  f"{seconds[1]:9.2f} {seconds[0] / seconds[1]:6.2f}", flush=True)
    print(f"all: general {totals[0]:.2f} CPU-s, new {totals[1]:.2f} CPU-s, ratio {totals[0] / totals[1]:.2f}")


if __name__ == "__main__":
    main()
