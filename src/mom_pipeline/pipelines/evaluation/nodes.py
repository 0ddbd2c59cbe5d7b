"""Evaluation nodes: per-sample metrics, per-trial summaries, chosen hyperparameters."""

from __future__ import annotations

import logging
import time

import pandas as pd

from mom_pipeline.datasets import TrialModels
from mom_pipeline.experiments import ExperimentSpec, TrialData, TrialSolutions, parse_spec
from mom_pipeline.experiments.evaluate import evaluate_trial, trial_summary
from mom_pipeline.experiments.identity import check_generated, check_same_trial
from mom_pipeline.experiments.progress import progress
from mom_pipeline.experiments.train import hyperparameter_rows

log = logging.getLogger(__name__)


def evaluate_models(problem_data: list[TrialData], solutions: list[TrialSolutions], models: TrialModels,
                    experiment: ExperimentSpec) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per (setting, trial, method, test sample), and the hyperparameters chosen on
    validation for every (setting, trial, method). Each trial's models are loaded once, one
    trial at a time; data, solutions and models must belong to the same trial."""
    spec = parse_spec(experiment)  # Kedro hands over the parsed spec: a no-op then
    check_generated(spec, problem_data)
    started = time.perf_counter()
    frames, rows = [], []
    for t, s in progress(list(zip(problem_data, solutions, strict=True)), desc=f"{spec.name}: evaluate"):
        stored = models.load(t.setting, t.trial)
        check_same_trial("models", stored.data_key, t, spec.name)
        frames.append(evaluate_trial(spec, t, s, stored.methods))
        rows += hyperparameter_rows(spec, t.setting, t.setting_value, t.trial, stored.methods)
    table = pd.concat(frames, ignore_index=True)
    log.info("%s: evaluated %d test decisions in %.1f s", spec.name, len(table), time.perf_counter() - started)
    return table, pd.DataFrame(rows)


def summarize_trials(evaluation: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, trial, method)."""
    return trial_summary(evaluation)
