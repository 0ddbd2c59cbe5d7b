"""Reporting: evaluation -> summary.csv, summary.md, figure.png, figure.json."""

from kedro.pipeline import Node, Pipeline

from .nodes import report_experiment


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline([
        Node(report_experiment, ["evaluation", "trial_summary", "params:experiment"],
             ["summary_table", "summary_markdown", "figure", "figure_plotly"], name="report_experiment"),
    ])
