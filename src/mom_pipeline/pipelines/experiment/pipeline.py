"""The experiment templates: the stages of one paper figure, declared in the order they run.

Each reads ``params:experiment`` (the figure's spec) and writes its datasets under the names
below; the pipeline registry instantiates a template per figure under the figure's namespace
(``fig1.problem_data``, ``params:fig1.experiment``, ...), with ``params:compute`` and
``params:storage`` shared by every figure.
"""

from kedro.pipeline import Node, Pipeline

from mom_pipeline.reporting import online_metrics, summary_metrics

from .nodes import (evaluate_models, extract_bases, generate_data, report_experiment, report_online, run_online,
                    plan_training, summarize_bases, summarize_data, summarize_trials)

REPORTS = ["summary_table", "summary_markdown", "figure", "figure_plotly"]


def data_pipeline() -> Pipeline:
    """params:experiment -> problem_data -> solutions (x*, optimal values, bases), with summaries."""
    return Pipeline([
        Node(generate_data, "params:experiment", "problem_data", name="generate_data"),
        Node(summarize_data, "problem_data", "data_summary", name="summarize_data"),
        Node(extract_bases, ["problem_data", "params:experiment"], "solutions", name="extract_bases"),
        Node(summarize_bases, ["problem_data", "solutions"], "basis_summary", name="summarize_bases"),
    ])


def create_pipeline(**kwargs) -> Pipeline:
    """Offline figure: data -> training (tuning on a validation quarter) -> LP evaluation ->
    summary, figure and tracked metrics. `plan_training` returns the training as a plan; it
    runs when Kedro saves the plan to `models` (`datasets.ModelTrainingDataset.save`)."""
    return data_pipeline() + Pipeline([
        Node(plan_training, ["problem_data", "solutions", "params:experiment", "params:compute", "params:storage"],
             "models", name="plan_training"),
        Node(evaluate_models, ["problem_data", "solutions", "models", "params:experiment"],
             ["evaluation", "hyperparameters"], name="evaluate_models"),
        Node(summarize_trials, "evaluation", "trial_summary", name="summarize_trials"),
        Node(report_experiment, ["evaluation", "trial_summary", "params:experiment"], REPORTS,
             name="report_experiment"),
        Node(summary_metrics, "summary_table", "metrics", name="track_metrics"),
    ])


def online_pipeline(**kwargs) -> Pipeline:
    """Online figure (5): data -> one pass of every online algorithm -> curves and tracked metrics."""
    return data_pipeline() + Pipeline([
        Node(run_online, ["problem_data", "solutions", "params:experiment", "params:compute"], "online_steps",
             name="run_online"),
        Node(report_online, ["online_steps", "params:experiment"], REPORTS, name="report_online"),
        Node(online_metrics, "summary_table", "metrics", name="track_metrics"),
    ])
