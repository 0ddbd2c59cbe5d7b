"""Benchmark: SPO+'s 9 x 5 tuning grid fitted jointly (lockstep) against cell by cell.

Figure 3's configuration of SPO+ (lam 1e-6..1e2 x step size 1e-3..1e1) tuned by `train_method` on
the first three trials of each of figure 3's sample sizes, twice in the same run: with the joint
`SPOPlus.fit_many` (one batched oracle call per step for every cell), and with it disabled, so
that `grid_search` fits the 45 cells one by one: the path every such grid took before the lockstep
checked the oracle's costs 2 c_hat - c for overflow (docs/decisions/016-lockstep-grids.md). The chosen cell must
be the same.

Run:  .venv/bin/python benchmarks/spo_plus_grid.py [--trials 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import threadpoolctl
import yaml

from mom_pipeline.experiments.data import generate_experiment, solve_experiment
from mom_pipeline.experiments.spec import parse_spec
from mom_pipeline.experiments.train import parse_methods, train_method
from mom_pipeline.methods.baselines import SPOPlus

ROOT = Path(__file__).resolve().parents[1]


def _cell_by_cell(cls, models, *args, **kwargs):
    raise RuntimeError("joint fit disabled: cell by cell")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    conf = yaml.safe_load((ROOT / "conf/base/parameters_knapsack.yml").read_text())
    spec = parse_spec(dict(conf["fig3"]["experiment"], trials=args.trials))
    config = next(c for c in parse_methods(spec) if c.label == "SPO+")
    trials = generate_experiment(spec)
    solutions = solve_experiment(trials, spec.basis_mode)
    joint = SPOPlus.fit_many.__func__
    totals = np.zeros(2)
    print(f"{'n_train':>8} {'trial':>5} | {'joint s':>8} {'cell by cell s':>14} {'ratio':>6} | same choice")
    with threadpoolctl.threadpool_limits(1):
        for trial, solution in zip(trials, solutions):
            seconds, chosen = [], []
            for fit_many in (joint, _cell_by_cell):
                SPOPlus.fit_many = classmethod(fit_many)
                try:
                    started = time.perf_counter()
                    chosen.append(train_method(spec, config, trial, solution).best_params)
                    seconds.append(time.perf_counter() - started)
                finally:
                    SPOPlus.fit_many = classmethod(joint)
            totals += seconds
            print(f"{trial.setting_value:>8g} {trial.trial:>5} | {seconds[0]:8.1f} {seconds[1]:14.1f} "
                  f"{seconds[1] / seconds[0]:6.1f} | {chosen[0] == chosen[1]}")
    print(f"{'total':>14} | {totals[0]:8.1f} {totals[1]:14.1f} {totals[1] / totals[0]:6.1f}  (cell by cell / joint)")


if __name__ == "__main__":
    main()
