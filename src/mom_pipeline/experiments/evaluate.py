"""LP evaluation: decisions of every fitted method on a trial's test samples, per sample."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..metrics import normalized_regret_by, sample_metric_columns
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
    if not trained:
        raise ValueError(f"{spec.name}: setting {trial.setting}, trial {trial.trial} has no trained method to evaluate")
    check_same_trial("solutions", solutions.data_key, trial, spec.name)
    for label, tm in trained.items():
        check_same_trial(f"models ({label})", tm.data_key, trial, spec.name)
    # The columns of every method at once and one frame per trial: a frame per method with its
    # key columns inserted one by one took half of an evaluation (figure 3: 4.0 s, now 2.1 s).
    labels, parts = list(trained), []
    for tm in trained.values():
        C_hat = tm.model.predict_cost(data.test.Z)
        decisions = data.lp.solve(C_hat, need_basis=False).x
        parts.append(sample_metric_columns(data.test.C, decisions, solutions.test.x, spec.problem, C_hat=C_hat))
    n_test = data.test.C.shape[0]
    n_rows = n_test * len(labels)
    columns = {"experiment": _repeated([spec.name], n_rows), "setting": _repeated([spec.sweep_param], n_rows),
               "setting_value": np.full(n_rows, float(trial.setting_value)),
               "trial": np.full(n_rows, trial.trial, dtype=np.int64),
               "method": _repeated(labels, n_test),
               "sample": np.tile(np.arange(n_test, dtype=np.int64), len(labels))}
    for name in parts[0]:
        columns[name] = np.concatenate([part[name] for part in parts])
    columns["fit_seconds"] = np.repeat([float(tm.fit_seconds) for tm in trained.values()], n_test)
    columns["generation"] = _repeated([trial.generation], n_rows)
    columns["data_key"] = _repeated([trial.key], n_rows)
    return pd.DataFrame(columns)


def _repeated(values: list[str], times: int) -> pd.api.extensions.ExtensionArray:
    """A string column: each of `values` repeated `times` times in a row (half the time of a list)."""
    return pd.array(values, dtype="str").repeat(times)


def trial_summary(evaluation: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, trial, method): mean and median relative loss, normalized
    regret, exact rate, fit time."""
    keys = ["experiment", "setting", "setting_value", "trial", "method"]
    keys += [c for c in ("generation", "data_key") if c in evaluation]
    out = evaluation.groupby(keys, sort=False).agg(**TRIAL_SUMMARY_COLUMNS)
    out["normalized_regret"] = normalized_regret_by(evaluation, keys)
    return out.reset_index()
