"""Experiment specs, trial generation and solving (no Kedro imports)."""

from .data import TrialData, TrialSolutions, describe_trials, generate_experiment, solve_experiment, solve_trial
from .spec import ExperimentSpec, SpecError, parse_spec

__all__ = [
    "ExperimentSpec",
    "SpecError",
    "TrialData",
    "TrialSolutions",
    "describe_trials",
    "generate_experiment",
    "parse_spec",
    "solve_experiment",
    "solve_trial",
]
