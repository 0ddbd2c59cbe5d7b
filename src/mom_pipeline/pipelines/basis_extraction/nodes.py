"""Nodes of the basis-extraction stage: thin wrappers over mom_pipeline.experiments."""

from __future__ import annotations

import logging
import time

import pandas as pd

from mom_pipeline.experiments import ExperimentSpec, TrialData, TrialSolutions, describe_trials, parse_spec, solve_experiment

log = logging.getLogger(__name__)


def extract_bases(problem_data: list[TrialData], experiment: ExperimentSpec) -> list[TrialSolutions]:
    """Optimal solutions of train and test samples and the training bases, per trial."""
    spec = parse_spec(experiment)  # Kedro hands over the parsed spec: a no-op then
    start = time.perf_counter()
    solutions = solve_experiment(problem_data, spec.basis_mode, spec.name)
    log.info("%s: solved and extracted bases (%s mode) for %d trials in %.2f s", spec.name, spec.basis_mode,
             len(solutions), time.perf_counter() - start)
    return solutions


def summarize_bases(problem_data: list[TrialData], solutions: list[TrialSolutions]) -> pd.DataFrame:
    """One row per trial with support sizes, degeneracy and the basis mode used."""
    return describe_trials(problem_data, solutions)
