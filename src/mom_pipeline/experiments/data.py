"""Generate an experiment's trials and solve/extract their bases, once per trial."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..lp import LPSolution
from ..problems import Trial, generate_trial
from .progress import progress
from .identity import data_key, generation_key
from .spec import ExperimentSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class TrialData:
    """A generated trial of one setting: which setting and trial, and the Trial itself.

    generation: hash of the inputs that generated it; key: hash of those inputs and of the
    samples (`identity.data_key`): every later stage records the key of the data it used."""

    setting: int
    setting_value: object
    trial: int
    data: Trial
    generation: str = ""
    key: str = ""


@dataclass(frozen=True, eq=False)
class TrialSolutions:
    """Optimal solutions of a trial's train and test samples and the training bases.

    basis_mode records how `train.basis` was obtained: "solver" (the optimal basis of the
    LP solved with the true costs: dual feasible for c) or "support" (from x* alone).
    """

    setting: int
    trial: int
    train: LPSolution
    test: LPSolution
    basis_mode: str
    data_key: str = ""


def generate_experiment(spec: ExperimentSpec) -> list[TrialData]:
    """Every (setting, trial) of the experiment, each from its own seed."""
    out = []
    for setting, trial in progress(spec.cells(), desc=f"{spec.name}: generate"):
        kwargs = spec.setting_kwargs(setting)
        data = generate_trial(spec.problem, **kwargs, seed=spec.trial_seed(setting, trial, stream=0))
        generation = generation_key(spec, setting, trial)
        out.append(TrialData(setting=setting, setting_value=spec.sweep_values[setting], trial=trial, data=data,
                             generation=generation, key=data_key(generation, data)))
    return out


def solve_trial(trial: TrialData, basis_mode: str) -> TrialSolutions:
    """Solve train and test LPs with the true costs (oracle when known) and pick the bases."""
    lp = trial.data.lp
    train = lp.solve(trial.data.train.C)
    test = lp.solve(trial.data.test.C) if len(trial.data.test) else None
    if basis_mode == "support":
        train = LPSolution(x=train.x, objective=train.objective, basis=lp.basis_from_solution(train.x))
    return TrialSolutions(setting=trial.setting, trial=trial.trial, train=train, test=test, basis_mode=basis_mode,
                          data_key=trial.key)


def solve_experiment(trials: list[TrialData], basis_mode: str, name: str = "") -> list[TrialSolutions]:
    """Solutions and bases of every trial (no sample is dropped: errors name the sample)."""
    return [solve_trial(t, basis_mode) for t in progress(trials, desc=f"{name}: solve and extract bases")]


def describe_trials(trials: list[TrialData], solutions: list[TrialSolutions] | None = None) -> pd.DataFrame:
    """One row per trial: sizes, cost scale and (with solutions) support and degeneracy."""
    rows = []
    for i, t in enumerate(trials):
        row = {
            "setting": t.setting,
            "setting_value": float(t.setting_value),
            "trial": t.trial,
            "n_train": len(t.data.train),
            "n_test": len(t.data.test),
            "n": t.data.lp.n,
            "m": t.data.lp.m,
            "d": t.data.train.Z.shape[1],
            "mean_cost": float(np.mean(t.data.train.C)),
        }
        if solutions is not None:
            s = solutions[i]
            support = (s.train.x > 0).sum(axis=1)
            row.update(
                basis_mode=s.basis_mode,
                mean_support=float(support.mean()),
                degenerate_fraction=float(np.mean(support < t.data.lp.m)),
                mean_train_optimal_value=float(s.train.objective.mean()),
            )
        rows.append(row)
    return pd.DataFrame(rows)
