"""Reporting: evaluation -> summary.csv, summary.md, figure.png, figure.json; the summary's
metrics to the experiment tracker (MLflow)."""

from kedro.pipeline import Node, Pipeline

from mom_pipeline.reporting import summary_metrics

from .nodes import report_experiment


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline([
        Node(report_experiment, ["evaluation", "trial_summary", "params:experiment"],
             ["summary_table", "summary_markdown", "figure", "figure_plotly"], name="report_experiment"),
        Node(summary_metrics, "summary_table", "metrics", name="track_metrics"),
    ])
