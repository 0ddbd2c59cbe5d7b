"""Data generation: params:experiment -> problem_data (+ a per-trial summary table)."""

from kedro.pipeline import Node, Pipeline

from .nodes import generate_data, summarize_data


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(generate_data, "params:experiment", "problem_data", name="generate_data"),
            Node(summarize_data, "problem_data", "data_summary", name="summarize_data"),
        ]
    )
