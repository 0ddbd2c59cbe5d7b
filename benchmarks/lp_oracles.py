"""Benchmark: exact oracles vs a loop of HiGHS solves, and basis extraction, in one run.

Prints wall times and ratios measured now, on this machine (targets: oracle >= 50x
faster than the HiGHS loop on both problems; basis extraction for 1000 samples < 1 s).
Usage: python benchmarks/lp_oracles.py [--samples 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mom_pipeline.lp import basis_from_solution, solve_lp_batch
from mom_pipeline.lp.bases import build_reduced_cost_operator  # uncached: the work itself
from mom_pipeline.problems import generate_knapsack, generate_shortest_path


def best_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    T = args.samples
    problems = {
        "shortest path 5x5 (n=40, m=24)": generate_shortest_path(T, 0, degree=4, seed=0),
        "fractional knapsack 10 items (n=21, m=11)": generate_knapsack(T, 0, degree=2, seed=0),
    }
    print(f"LP oracles vs HiGHS, {T} samples, best of {args.repeats}")
    print(f"{'problem':45s} {'oracle s':>10s} {'HiGHS loop s':>13s} {'ratio':>8s} {'max |obj diff|':>15s}")
    for name, trial in problems.items():
        lp, C = trial.lp, trial.train.C
        oracle = lp.solve(C)
        highs = solve_lp_batch(lp.A, lp.b, C)
        gap = np.abs(oracle.objective - highs.objective).max()
        t_oracle = best_time(lambda: lp.solve(C), args.repeats)
        t_highs = best_time(lambda: solve_lp_batch(lp.A, lp.b, C), 1)
        print(f"{name:45s} {t_oracle:10.4f} {t_highs:13.3f} {t_highs / t_oracle:7.0f}x {gap:15.1e}")
    print()
    print(f"Basis extraction for {T} samples, best of {args.repeats}")
    for name, trial in problems.items():
        lp = trial.lp
        X = lp.solve(trial.train.C).x
        basis = basis_from_solution(lp.A, lp.b, X)
        t_support = best_time(lambda: basis_from_solution(lp.A, lp.b, X), args.repeats)
        t_operator = best_time(lambda: build_reduced_cost_operator(lp.A, basis), args.repeats)
        print(f"{name:45s} bases from x* {t_support:.4f} s   reduced-cost operators {t_operator:.4f} s")


if __name__ == "__main__":
    main()
