"""Tuning grids of one figure-4/6 trial: cells fitted together (`fit_many`) vs one by one.

One knapsack trial as figures 4 and 6 draw it (degree 4, no noise, U[-1,1]^4 features, 500
training samples of which the tuning fits use 375). For each method the same grid cells are
fitted one by one (the reference) and together (`fit_many`: MOM over its lam path, one
kernel matrix per (degree, gamma), kernel ridge from one eigendecomposition, SPO+ in
lockstep), and the seconds per trial of the method's FULL grid are extrapolated from the
sampled (degree, gamma) cells (every cell of a sample is fitted over all nine lam values).
Usage: python benchmarks/tuning_grids.py [--kernel-cells 3] [--degree 4] [--feature-low -1] [--together-only]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mom_pipeline.allocator import keep_freed_memory
from mom_pipeline.methods import MOM, KernelMOM, SPOPlus
from mom_pipeline.methods.baselines import KernelRidgeCost
from mom_pipeline.problems import generate_knapsack

# The paper's tuning grids, as in the figures' parameters (conf/base/parameters_*.yml).
LAMBDA_GRID = np.logspace(-6, 2, 9)
STEP_GRID = np.logspace(-3, 1, 5)
KERNEL_DEGREES = [1, 2, 3, 4]
KERNEL_GAMMAS = [0.1, 0.5, 1, 2, 3, 4, 5]


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def fit_or_fail(model, *args, **kwargs) -> bool:
    """Fit one cell; False when it fails (SPO+ at lam 100, step 10 overflows), as grid_search records it."""
    try:
        model.fit(*args, **kwargs)
    except FloatingPointError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kernel-cells", type=int, default=3, help="(degree, gamma) cells sampled per kernel")
    parser.add_argument("--degree", type=int, default=4)
    parser.add_argument("--feature-low", type=float, default=-1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", default="MOM,PolyMOM,RbfMOM,PolyRidge,RbfRidge,SPO+", help="comma-separated")
    parser.add_argument("--together-only", action="store_true",
                        help="time only fit_many (to compare two versions of the code on the same cells)")
    args = parser.parse_args()
    trial = generate_knapsack(375, 0, degree=args.degree, feature_low=args.feature_low, seed=args.seed)
    Z, C = trial.train.Z, trial.train.C
    solution = trial.lp.solve(C)
    fit_args = dict(lp=trial.lp, basis=solution.basis)
    rng = np.random.default_rng(args.seed)
    poly_cells = [(d, g) for d in KERNEL_DEGREES for g in KERNEL_GAMMAS]
    sampled_poly = [poly_cells[i] for i in rng.choice(len(poly_cells), args.kernel_cells, replace=False)]
    sampled_rbf = list(rng.choice(KERNEL_GAMMAS, min(args.kernel_cells, len(KERNEL_GAMMAS)), replace=False))
    lams = [float(v) for v in LAMBDA_GRID]
    cases = {
        "MOM": (1, lambda: [MOM(lam=lam) for lam in lams], {}),
        "PolyMOM": (len(poly_cells) / len(sampled_poly),
                    lambda: [KernelMOM(kernel="poly", degree=d, gamma=g, lam=lam) for d, g in sampled_poly for lam in lams],
                    {}),
        "RbfMOM": (len(KERNEL_GAMMAS) / len(sampled_rbf),
                   lambda: [KernelMOM(kernel="rbf", gamma=float(g), lam=lam) for g in sampled_rbf for lam in lams], {}),
        "PolyRidge": (1, lambda: [KernelRidgeCost(kernel="poly", degree=d, gamma=g, lam=lam) for d, g in poly_cells for lam in lams],
                      dict(C=C)),
        "RbfRidge": (1, lambda: [KernelRidgeCost(kernel="rbf", gamma=g, lam=lam) for g in KERNEL_GAMMAS for lam in lams], dict(C=C)),
        "SPO+": (1, lambda: [SPOPlus(lam=lam, step_size=float(s)) for lam in lams for s in STEP_GRID], dict(C=C)),
    }
    print(f"knapsack degree {args.degree}, features U[{args.feature_low:g},1]^4, T = 375; sampled poly cells "
          f"{sampled_poly}, rbf gammas {[float(g) for g in sampled_rbf]}")
    print(f"{'method':10s} {'cells':>6s} {'one by one s':>13s} {'together s':>11s} {'ratio':>6s} "
          f"{'full grid s (one by one)':>25s} {'full grid s (together)':>23s}")
    for name in args.methods.split(","):
        scale, make, extra = cases[name]
        models = make()
        separate = float("nan") if args.together_only else timed(
            lambda: [fit_or_fail(m, Z, solution.x, **fit_args, **extra) for m in models])
        together = timed(lambda: type(models[0]).fit_many(make(), Z, solution.x, **fit_args, **extra))
        print(f"{name:10s} {len(models):6d} {separate:13.2f} {together:11.2f} {separate / together:6.2f} "
              f"{separate * scale:25.1f} {together * scale:23.1f}", flush=True)


if __name__ == "__main__":
    keep_freed_memory()  # the malloc settings a Kedro run works under (mom_pipeline.allocator)
    main()
