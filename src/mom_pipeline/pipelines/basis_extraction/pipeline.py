"""Basis extraction: problem_data -> solutions (x*, optimal values, bases) + summary."""

from kedro.pipeline import Node, Pipeline

from .nodes import extract_bases, summarize_bases


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline(
        [
            Node(extract_bases, ["problem_data", "params:experiment"], "solutions", name="extract_bases"),
            Node(summarize_bases, ["problem_data", "solutions"], "basis_summary", name="summarize_bases"),
        ]
    )
