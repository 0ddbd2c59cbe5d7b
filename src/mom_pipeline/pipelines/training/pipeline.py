"""Training: problem_data + solutions -> models (one stored file per trial, a manifest per run)."""

from kedro.pipeline import Node, Pipeline

from .nodes import train_models


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline([
        Node(train_models, ["problem_data", "solutions", "params:experiment", "params:compute", "params:storage"],
             "models", name="train_models"),
    ])
