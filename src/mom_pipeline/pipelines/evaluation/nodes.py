"""Evaluation nodes: per-sample metrics, per-trial summaries, chosen hyperparameters."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pandas as pd

from mom_pipeline.experiments import TrialData, TrialSolutions, parse_spec
from mom_pipeline.experiments.evaluate import evaluate_trial, trial_summary
from mom_pipeline.experiments.progress import progress
from mom_pipeline.experiments.train import hyperparameter_rows, partition_key

log = logging.getLogger(__name__)


def _models_of(models: dict[str, Callable], trial: TrialData, name: str):
    key = partition_key(trial.setting, trial.trial)
    if key not in models:
        raise KeyError(f"{name}: no fitted models for setting {trial.setting}, trial {trial.trial} "
                       f"(partition {key!r}); rerun the training stage")
    return models[key]()


def evaluate_models(problem_data: list[TrialData], solutions: list[TrialSolutions],
                    models: dict[str, Callable], experiment: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per (setting, trial, method, test sample), and the hyperparameters chosen on
    validation for every (setting, trial, method). Each trial's models are loaded once (the
    partitions are large compressed pickles), one trial at a time."""
    spec = parse_spec(experiment)
    started = time.perf_counter()
    frames, rows = [], []
    for t, s in progress(list(zip(problem_data, solutions)), desc=f"{spec.name}: evaluate"):
        trained = _models_of(models, t, spec.name)
        frames.append(evaluate_trial(spec, t, s, trained))
        rows += hyperparameter_rows(spec, t.setting, t.setting_value, t.trial, trained)
    table = pd.concat(frames, ignore_index=True)
    log.info("%s: evaluated %d test decisions in %.1f s", spec.name, len(table), time.perf_counter() - started)
    return table, pd.DataFrame(rows)


def summarize_trials(evaluation: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, trial, method)."""
    return trial_summary(evaluation)
