"""Kernel MOM cell by cell on a figure-4 trial: the code before and after the warm starts of
its working sets, back to back in one run.

One trial of figure 4 as the experiment draws it (knapsack, 500 training samples, no noise,
U[-1,1]^4 features, seed 104 and the trial's spawn key; the tuning fits use the 375 samples of
the validation split). Each (degree, gamma) cell is fitted over the nine lam values 1e-6..1e2
(`KernelMOM.fit_many`: one regularization path per cell; the cells in one call, as a tuning
grid fits them), first as before (every restricted QP by the interior-point method, Clarabel
after a stall, no start from a neighbouring cell: the reference), then with the active-set
guesses of `box_active_set` and, for polynomial cells, each path started from the previous
cell's margins; the two objectives are compared.
Usage: python benchmarks/kernel_mom_cells.py --data-degree 1 --kernel rbf --cells 0.1 0.5
       python benchmarks/kernel_mom_cells.py --data-degree 6 --kernel poly --cells 4:0.1 4:0.5 4:1
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mom_pipeline.allocator import keep_freed_memory
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


def cell_params(kernel: str, cell: str, rbf_norm: str = "unsquared") -> dict:
    """A cell's KernelMOM parameters; RBF cells with the figures' norm unless told (unsquared, the
    released code's; "squared" is the paper text's)."""
    if kernel == "poly":
        degree, gamma = cell.split(":")
        return dict(kernel="poly", degree=int(degree), gamma=float(gamma))
    return dict(kernel="rbf", gamma=float(cell), rbf_norm=rbf_norm)


def fit_cells(data, kernel: str, cells: list[str], fast: bool,
              rbf_norm: str = "unsquared") -> tuple[list[float], list[np.ndarray]]:
    """Seconds (total, and per cell from the paths' own timers) and objectives of the cells,
    fitted together as a tuning grid does (one `fit_many` call, cells in the given order)."""
    Z, X, lp, basis = data
    original_active_set, original_group = hinge_working_set.box_qp_active_set, KernelMOM._fit_group
    if not fast:  # the code before: no active-set guesses, no start from a neighbouring cell
        hinge_working_set.box_qp_active_set = lambda *args, **kwargs: (None, 0)
        KernelMOM._fit_group = staticmethod(lambda group, Z, X, A, b, lp, basis, start_margins=None, operators=None:
                                            original_group(group, Z, X, A, b, lp, basis, None, operators))
    try:
        models = [KernelMOM(lam=lam, **cell_params(kernel, cell, rbf_norm)) for cell in cells for lam in LAMBDAS]
        start = time.perf_counter()
        KernelMOM.fit_many(models, Z, X, lp=lp, basis=basis)
        total = time.perf_counter() - start
    finally:
        hinge_working_set.box_qp_active_set, KernelMOM._fit_group = original_active_set, original_group
    per_cell = [models[i:i + len(LAMBDAS)] for i in range(0, len(models), len(LAMBDAS))]
    seconds = [sum(m.solver_info_["seconds"] for m in cell) for cell in per_cell]
    return [total] + seconds, [np.array([m.objective_ for m in cell]) for cell in per_cell]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-degree", type=int, default=1, choices=FIGURE4_DEGREES)
    parser.add_argument("--kernel", default="rbf", choices=["poly", "rbf"])
    parser.add_argument("--cells", nargs="+", default=["0.1"], help="rbf: gamma; poly: degree:gamma")
    parser.add_argument("--trial", type=int, default=0)
    parser.add_argument("--rbf-norm", default="unsquared", choices=["unsquared", "squared"],
                        help="the figures' RBF norm (unsquared) or the paper text's (squared)")
    args = parser.parse_args()
    data = figure4_tuning_data(args.data_degree, args.trial)
    print(f"figure 4, data degree {args.data_degree}, trial {args.trial}: {args.kernel} kernel MOM, 9 lam values per cell")
    print(f"{'cell':>8s} {'before s':>9s} {'after s':>8s} {'ratio':>6s} {'max rel. objective diff':>24s}")
    before, f_before = fit_cells(data, args.kernel, args.cells, fast=False, rbf_norm=args.rbf_norm)
    after, f_after = fit_cells(data, args.kernel, args.cells, fast=True, rbf_norm=args.rbf_norm)
    for cell, t_before, t_after, o_before, o_after in zip(args.cells, before[1:], after[1:], f_before, f_after):
        difference = float(np.max(np.abs(o_after - o_before) / np.abs(o_before)))
        print(f"{cell:>8s} {t_before:9.2f} {t_after:8.2f} {t_before / t_after:6.2f} {difference:24.1e}")
    print(f"{'total':>8s} {before[0]:9.2f} {after[0]:8.2f} {before[0] / after[0]:6.2f}  (wall time of the fit_many call)")


if __name__ == "__main__":
    keep_freed_memory()  # the malloc settings a Kedro run works under (mom_pipeline.allocator)
    main()
