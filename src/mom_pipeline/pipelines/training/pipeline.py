"""Training: problem_data + solutions -> models (one partition per trial)."""

from kedro.pipeline import Node, Pipeline

from .nodes import train_models


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline([
        Node(train_models, ["problem_data", "solutions", "params:experiment", "params:compute"], "models",
             name="train_models"),
    ])
