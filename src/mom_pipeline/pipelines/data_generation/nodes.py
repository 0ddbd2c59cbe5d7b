"""Nodes of the data-generation stage: thin wrappers over mom_pipeline.experiments."""

from __future__ import annotations

import logging
import time

import pandas as pd

from mom_pipeline.experiments import ExperimentSpec, TrialData, describe_trials, generate_experiment, parse_spec

log = logging.getLogger(__name__)


def generate_data(experiment: ExperimentSpec) -> list[TrialData]:
    """Generate every (setting, trial) of the experiment from its seed."""
    spec = parse_spec(experiment)  # Kedro hands over the parsed spec: a no-op then
    start = time.perf_counter()
    trials = generate_experiment(spec)
    log.info("%s: generated %d trials in %.2f s", spec.name, len(trials), time.perf_counter() - start)
    return trials


def summarize_data(problem_data: list[TrialData]) -> pd.DataFrame:
    """One row per trial (sizes, cost scale) for a quick look in kedro-viz."""
    return describe_trials(problem_data)
