"""CPU cost of the DFL benchmark's full protocol, from one measured trial per cell class.

For every experiment of `dfl_benchmark` (both problems, both noise levels, the three training
sizes; the epochs and grids of conf/base/parameters_dfl_benchmark.yml, i.e. PyEPO's 200 / 20 / 4
epochs at T = 100 / 1000 / 5000), one trial at one degree (default 4) is generated, solved,
trained method by method and evaluated, each step timed in CPU seconds of this process
(`time.process_time`: every thread, one BLAS thread). The estimate of the full protocol is
sum over experiments of (CPU seconds of the trial) x (degrees of the sweep) x (trials).
Rows go to --out as they are measured (CSV: experiment, method, cpu_seconds).
Usage: OMP_NUM_THREADS=1 python benchmarks/dfl_protocol_cost.py [--experiments noise0_n100,...]
       [--degree 4] [--methods "MOM x*,I-MLE"] [--out data/09_benchmarks/dfl_protocol_cost.csv]
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import os
import time
from pathlib import Path

from kedro.config import OmegaConfigLoader

from mom_pipeline.experiments.data import TrialData, solve_trial
from mom_pipeline.experiments.evaluate import evaluate_trial
from mom_pipeline.experiments.identity import data_key, generation_key
from mom_pipeline.experiments.spec import parse_spec
from mom_pipeline.experiments.train import train_method
from mom_pipeline.problems import generate_trial
from mom_pipeline.settings import CONFIG_LOADER_ARGS

ROOT = Path(__file__).resolve().parents[1]


def benchmark_specs(env: str | None = None) -> dict:
    """{experiment key: ExperimentSpec} of `dfl_benchmark` as the project's config loader merges it."""
    args = {k: v for k, v in CONFIG_LOADER_ARGS.items() if k not in ("base_env", "default_run_env")}
    loader = OmegaConfigLoader(conf_source=str(ROOT / "conf"), base_env="base", default_run_env=env or "local", **args)
    parameters = loader["parameters"]["dfl_benchmark"]
    return {key: parse_spec(value["experiment"]) for key, value in parameters.items()
            if isinstance(value, dict) and "experiment" in value}


def one_trial(spec, degree: float) -> TrialData:
    setting = list(spec.sweep_values).index(degree)
    data = generate_trial(spec.problem, **spec.setting_kwargs(setting), seed=spec.trial_seed(setting, 0, stream=0))
    generation = generation_key(spec, setting, 0)
    return TrialData(setting=setting, setting_value=degree, trial=0, data=data, generation=generation,
                     key=data_key(generation, data))


def timed(fn):
    started = time.process_time()
    out = fn()
    return out, time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--experiments", default="")
    parser.add_argument("--methods", default="")
    parser.add_argument("--degree", type=float, default=4)
    parser.add_argument("--env", default=None)
    parser.add_argument("--out", default=str(ROOT / "data/09_benchmarks/dfl_protocol_cost.csv"))
    args = parser.parse_args()
    specs = benchmark_specs(args.env)
    chosen = [key for key in (args.experiments.split(",") if args.experiments else specs)]
    wanted = set(args.methods.split(",")) if args.methods else None
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    new = not out.exists()
    total = 0.0
    with out.open("a", newline="") as handle:
        writer = csv.writer(handle)
        if new:
            writer.writerow(["experiment", "degree", "method", "cpu_seconds", "cells", "trials"])

        def row(key, spec, method, seconds):
            writer.writerow([key, args.degree, method, f"{seconds:.3f}", spec.n_settings, spec.trials])
            handle.flush()
            print(f"{key:24s} {method:22s} {seconds:9.2f} CPU-s", flush=True)

        for key in chosen:
            spec = specs[key]
            trial, seconds = timed(lambda: one_trial(spec, args.degree))
            solutions, solve_seconds = timed(lambda: solve_trial(trial, spec.basis_mode))
            row(key, spec, "(generate and solve)", seconds + solve_seconds)
            trained, cell = {}, seconds + solve_seconds
            for config in spec.method_configs():
                if wanted is not None and config.label not in wanted:
                    continue
                method, seconds = timed(lambda: train_method(spec, config, trial, solutions))
                trained[config.label] = dataclasses.replace(method, data_key=trial.key)
                row(key, spec, config.label, seconds)
                cell += seconds
            _, seconds = timed(lambda: evaluate_trial(spec, trial, solutions, trained))
            row(key, spec, "(evaluate)", seconds)
            cell += seconds
            total += cell * spec.n_settings * spec.trials
            print(f"{key}: {cell:.1f} CPU-s a trial, x {spec.n_settings} degrees x {spec.trials} trials = "
                  f"{cell * spec.n_settings * spec.trials / 3600:.2f} CPU-h", flush=True)
    print(f"estimate of the chosen experiments: {total / 3600:.2f} CPU-h", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "true")
    main()
