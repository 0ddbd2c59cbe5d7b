"""The online experiment (figure 5): each algorithm makes one pass over a trial's stream."""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd

from ..methods.tuning import radius_grid
from .data import TrialData, TrialSolutions
from .spec import ExperimentSpec, SpecError
from .train import estimator_class, parse_methods

log = logging.getLogger(__name__)


def run_online_trial(spec: ExperimentSpec, trial: TrialData, solutions: TrialSolutions) -> pd.DataFrame:
    """One row per (method, step t): regret c_t'(x_t - x*_t), its cumulative sum (the y axis of the
    published figure 5), the relative regret (regret / ||c_t|| on the knapsack) and its cumulative
    sum (the paper text's "cumulative regret"), mistakes and ||Theta_t||_F.

    The algorithms see z_t and x*_t (and its basis) only; the true costs are used to
    report regret. Hyperparameters are fixed by the configuration (no validation split in
    an online stream).
    """
    data = trial.data
    frames = []
    T = len(data.train)
    regret_scale = "l2" if spec.problem == "knapsack" else "objective"
    for config in parse_methods(spec):
        cls = estimator_class(config.estimator)
        params = dict(config.params)
        if config.radius_factors:
            if len(config.radius_factors) > 1:  # no validation split in a stream to choose one
                raise SpecError(f"experiment {spec.name!r}: method {config.label!r}: an online run takes one "
                                f"radius factor; got {list(config.radius_factors)}")
            params["radius"] = float(radius_grid(data.V, config.radius_factors)[0])
        model = cls(**params)
        started = time.perf_counter()
        model.fit(data.train.Z, solutions.train.x, lp=data.lp, basis=solutions.train.basis, C=data.train.C,
                  regret_scale=regret_scale)
        seconds = time.perf_counter() - started
        frames.append(pd.DataFrame({
            "experiment": spec.name,
            "trial": trial.trial,
            "method": config.label,
            "step": np.arange(1, T + 1),
            "regret": model.regret_,
            "cumulative_regret": model.cumulative_regret_,
            "relative_regret": model.relative_regret_,
            "cumulative_relative_regret": model.cumulative_relative_regret_,
            "mistakes": model.mistakes_,
            "theta_norm": model.coef_path_norms_[1:],
            "seconds": seconds,
        }))
        # per-trial detail at DEBUG, as the offline trials'; one INFO line per figure (`log_online_summary`)
        log.debug("%s: trial %d %s: %d steps in %.2f s, cumulative regret %.3f (relative %.3f)", spec.name,
                  trial.trial, config.label, T, seconds, model.cumulative_regret_[-1],
                  model.cumulative_relative_regret_[-1])
    return pd.concat(frames, ignore_index=True)


def log_online_summary(name: str, steps: pd.DataFrame) -> None:
    """One console line for an online figure: each method's final cumulative regret, the mean
    over its trials (summary.csv holds it with the rest)."""
    last = steps[steps["step"] == steps["step"].max()]
    means = last.groupby("method", sort=False)["cumulative_regret"].mean()
    log.info("%s: %d trials of %d steps, mean final cumulative regret: %s", name, last["trial"].nunique(),
             int(steps["step"].max()), ", ".join(f"{method} {value:.3g}" for method, value in means.items()))
