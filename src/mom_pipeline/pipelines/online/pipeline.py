"""Online: problem_data + solutions -> online_steps -> summary, curves; metrics to MLflow."""

from kedro.pipeline import Node, Pipeline

from mom_pipeline.reporting import online_metrics

from .nodes import report_online, run_online


def create_pipeline(**kwargs) -> Pipeline:
    return Pipeline([
        Node(run_online, ["problem_data", "solutions", "params:experiment", "params:compute"], "online_steps", name="run_online"),
        Node(report_online, ["online_steps", "params:experiment"],
             ["summary_table", "summary_markdown", "figure", "figure_plotly"], name="report_online"),
        Node(online_metrics, "summary_table", "metrics", name="track_metrics"),
    ])
