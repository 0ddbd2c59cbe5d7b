"""Evaluation: models -> evaluation (per test sample), hyperparameters, trial_summary."""

from kedro.pipeline import Node, Pipeline

from .nodes import evaluate_models, summarize_trials


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline([
        Node(evaluate_models, ["problem_data", "solutions", "models", "params:experiment"],
             ["evaluation", "hyperparameters"], name="evaluate_models"),
        Node(summarize_trials, "evaluation", "trial_summary", name="summarize_trials"),
    ])
