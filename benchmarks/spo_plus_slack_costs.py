"""Benchmark: SPO+ on the knapsack figures with and without costs on the LP's slack columns.

SPO+ as configured in a knapsack figure (its full 9 x 5 grid, batch 5, 2000 steps), tuned by
`train_method` on the figure's trials exactly as the pipeline does (same validation quarters and
seeds), once per `cost_columns` value; prints, per setting, the median over trials of the mean test
relative loss and the step sizes chosen (docs/decisions/024-spo-plus-slack-costs.md).

Run:  .venv/bin/python benchmarks/spo_plus_slack_costs.py fig6 [--trials 10] [--cost-columns non_slack,all]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import yaml

from mom_pipeline.experiments.data import generate_experiment, solve_experiment
from mom_pipeline.experiments.spec import MethodConfig, parse_spec
from mom_pipeline.experiments.train import train_method
from mom_pipeline.metrics import sample_metric_columns

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("figure", choices=["fig3", "fig6"])
    parser.add_argument("--trials", type=int, default=None, help="default: the figure's")
    parser.add_argument("--cost-columns", default="non_slack,all")
    args = parser.parse_args()
    conf = yaml.safe_load((ROOT / "conf/base/parameters_knapsack.yml").read_text())
    experiment = dict(conf[args.figure]["experiment"])
    spo = experiment["methods"]["SPO+"]
    experiment["methods"] = {"SPO+": spo}
    if args.trials is not None:
        experiment["trials"] = args.trials
    spec = parse_spec(experiment)
    trials = generate_experiment(spec)
    solutions = solve_experiment(trials, spec.basis_mode)
    for cost_columns in args.cost_columns.split(","):
        config = MethodConfig(**{**spo, "label": "SPO+", "params": {**spo["params"], "cost_columns": cost_columns}})
        started = time.perf_counter()
        losses: dict = {}
        steps: dict = {}
        for trial, solved in zip(trials, solutions):
            model = train_method(spec, config, trial, solved)
            data = trial.data
            decisions = model.model.decide(data.test.Z, data.lp).x
            loss = sample_metric_columns(data.test.C, decisions, solved.test.x, spec.problem)["relative_loss"].mean()
            losses.setdefault(trial.setting_value, []).append(loss)
            steps.setdefault(trial.setting_value, set()).add(model.best_params["step_size"])
        for value, values in losses.items():
            print(f"{args.figure} cost_columns={cost_columns} {spec.sweep_param}={value}: median {np.median(values):.3g}, "
                  f"max {np.max(values):.3g} over {len(values)} trials; step sizes chosen {sorted(steps[value])}")
        print(f"cost_columns={cost_columns}: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
