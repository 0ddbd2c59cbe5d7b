"""Evaluation: models -> evaluation (per test sample), trial_summary, hyperparameters."""

from kedro.pipeline import Node, Pipeline

from .nodes import evaluate_models, summarize_trials, tabulate_hyperparameters


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline([
        Node(evaluate_models, ["problem_data", "solutions", "models", "params:experiment"], "evaluation",
             name="evaluate_models"),
        Node(summarize_trials, "evaluation", "trial_summary", name="summarize_trials"),
        Node(tabulate_hyperparameters, ["problem_data", "models", "params:experiment"], "hyperparameters",
             name="tabulate_hyperparameters"),
    ])
