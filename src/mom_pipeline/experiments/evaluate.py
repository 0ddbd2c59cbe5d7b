"""LP evaluation: decisions of every fitted method on a trial's test samples, per sample."""

from __future__ import annotations

import pandas as pd

from ..metrics import normalized_regret_by, per_sample_metrics
from .data import TrialData, TrialSolutions
from .identity import check_same_trial
from .spec import ExperimentSpec
from .train import TrainedMethod

# A trial summary's columns besides the keys and normalized regret: name -> (column of the
# per-sample evaluation, how a trial aggregates it).
TRIAL_SUMMARY_COLUMNS = {
    "mean_relative_loss": ("relative_loss", "mean"),
    "median_relative_loss": ("relative_loss", "median"),
    "mean_relative_loss_released": ("relative_loss_released", "mean"),
    "exact_rate": ("exact", "mean"),
    "fit_seconds": ("fit_seconds", "first"),
    "n_test": ("sample", "size"),
}


def evaluate_trial(spec: ExperimentSpec, trial: TrialData, solutions: TrialSolutions,
                   trained: dict[str, TrainedMethod]) -> pd.DataFrame:
    """One row per (method, test sample): regret, relative loss, optimal value, exact, ...

    The test LPs are solved once with the true costs (`solutions.test`); each method's
    decisions come from one batched solve of its predicted costs.
    """
    data = trial.data
    check_same_trial("solutions", solutions.data_key, trial, spec.name)
    for label, tm in trained.items():
        check_same_trial(f"models ({label})", tm.data_key, trial, spec.name)
    frames = []
    for label, tm in trained.items():
        C_hat = tm.model.predict_cost(data.test.Z)
        decisions = data.lp.solve(C_hat, need_basis=False).x
        frame = per_sample_metrics(data.test.C, decisions, solutions.test.x, spec.problem, C_hat=C_hat)
        frame = frame.reset_index()
        frame.insert(0, "method", label)
        frame.insert(0, "trial", trial.trial)
        frame.insert(0, "setting_value", float(trial.setting_value))
        frame.insert(0, "setting", spec.sweep_param)
        frame.insert(0, "experiment", spec.name)
        frame["fit_seconds"] = tm.fit_seconds
        frame["generation"] = trial.generation
        frame["data_key"] = trial.key
        frames.append(frame)
    table = pd.concat(frames, ignore_index=True)
    table["exact"] = table["exact"].astype(bool)
    return table


def trial_summary(evaluation: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, trial, method): mean and median relative loss, normalized
    regret, exact rate, fit time."""
    keys = ["experiment", "setting", "setting_value", "trial", "method"]
    keys += [c for c in ("generation", "data_key") if c in evaluation]
    out = evaluation.groupby(keys, sort=False).agg(**TRIAL_SUMMARY_COLUMNS)
    out["normalized_regret"] = normalized_regret_by(evaluation, keys)
    return out.reset_index()
