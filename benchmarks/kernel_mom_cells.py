"""Kernel MOM cell by cell on a figure-4 trial: the warm-started active-set box QP against the
interior-point method alone, back to back in one run.

One trial of figure 4 as the experiment draws it (knapsack, 500 training samples, no noise,
U[-1,1]^4 features, seed 104 and the trial's spawn key; the tuning fits use the 375 samples of
the validation split). Each (degree, gamma) cell is fitted over the nine lam values 1e-6..1e2
(`KernelMOM.fit_many`: one regularization path), first with `box_active_set` switched off (every
restricted QP by the interior-point method, Clarabel after a stall: the reference), then with
it, and the two objectives are compared.
Usage: python benchmarks/kernel_mom_cells.py --data-degree 1 --kernel rbf --cells 0.1 0.5
       python benchmarks/kernel_mom_cells.py --data-degree 6 --kernel poly --cells 4:5 3:1
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import mom_pipeline.solvers.hinge_working_set as hinge_working_set
from mom_pipeline.methods import KernelMOM
from mom_pipeline.methods.tuning import validation_split
from mom_pipeline.problems import generate_knapsack

FIGURE4_SEED = 104
FIGURE4_DEGREES = [1, 2, 4, 6]
LAMBDAS = [float(v) for v in np.logspace(-6, 2, 9)]


def figure4_tuning_data(data_degree: int, trial: int = 0):
    """The tuning fits' samples of one figure-4 trial: Z, X_star, LPs and bases of the 375."""
    seed = np.random.SeedSequence(entropy=FIGURE4_SEED, spawn_key=(FIGURE4_DEGREES.index(data_degree), trial, 0))
    data = generate_knapsack(500, 0, degree=data_degree, eps_bar=0.0, feature_low=-1.0, seed=seed)
    solution = data.lp.solve(data.train.C)
    train, _ = validation_split(500, 0.25, 0)
    return data.train.Z[train], solution.x[train], data.lp.subset(train), solution.basis[train]


def fit_cell(data, kernel: str, cell: str, active_set: bool) -> tuple[float, np.ndarray]:
    """Seconds and objectives of one cell over the nine lam values."""
    Z, X, lp, basis = data
    if kernel == "poly":
        degree, gamma = cell.split(":")
        params = dict(kernel="poly", degree=int(degree), gamma=float(gamma))
    else:
        params = dict(kernel="rbf", gamma=float(cell))
    original = hinge_working_set.box_qp_active_set
    if not active_set:
        hinge_working_set.box_qp_active_set = lambda *args, **kwargs: (None, 0)
    try:
        models = [KernelMOM(lam=lam, **params) for lam in LAMBDAS]
        start = time.perf_counter()
        KernelMOM.fit_many(models, Z, X, lp=lp, basis=basis)
        seconds = time.perf_counter() - start
    finally:
        hinge_working_set.box_qp_active_set = original
    return seconds, np.array([model.objective_ for model in models])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-degree", type=int, default=1, choices=FIGURE4_DEGREES)
    parser.add_argument("--kernel", default="rbf", choices=["poly", "rbf"])
    parser.add_argument("--cells", nargs="+", default=["0.1"], help="rbf: gamma; poly: degree:gamma")
    parser.add_argument("--trial", type=int, default=0)
    args = parser.parse_args()
    data = figure4_tuning_data(args.data_degree, args.trial)
    print(f"figure 4, data degree {args.data_degree}, trial {args.trial}: {args.kernel} kernel MOM, 9 lam values per cell")
    print(f"{'cell':>8s} {'interior point s':>17s} {'active set s':>13s} {'ratio':>6s} {'max rel. objective diff':>24s}")
    totals = [0.0, 0.0]
    for cell in args.cells:
        reference, f_reference = fit_cell(data, args.kernel, cell, active_set=False)
        fast, f_fast = fit_cell(data, args.kernel, cell, active_set=True)
        totals[0] += reference
        totals[1] += fast
        difference = float(np.max(np.abs(f_fast - f_reference) / np.abs(f_reference)))
        print(f"{cell:>8s} {reference:17.2f} {fast:13.2f} {reference / fast:6.2f} {difference:24.1e}", flush=True)
    print(f"{'total':>8s} {totals[0]:17.2f} {totals[1]:13.2f} {totals[0] / totals[1]:6.2f}")


if __name__ == "__main__":
    main()
