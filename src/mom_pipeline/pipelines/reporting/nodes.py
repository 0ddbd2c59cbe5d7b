"""Reporting nodes: thin wrappers over mom_pipeline.reporting."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from mom_pipeline.experiments import ExperimentSpec, parse_spec
from mom_pipeline.experiments.identity import check_tables
from mom_pipeline.reporting import boxplot_figure, boxplot_plotly, summary_markdown, summary_table, trial_count


def _title(spec) -> str:
    what = f"{spec.problem.replace('_', ' ')}, {trial_count(spec.trials)}"
    return f"Figure {spec.figure}: {what}" if spec.figure else f"{spec.name}: {what}"


def report_experiment(evaluation: pd.DataFrame, trial_summary: pd.DataFrame, experiment: ExperimentSpec):
    """Summary (CSV and markdown), the box-plot figure (matplotlib) and its plotly twin."""
    spec = parse_spec(experiment)  # Kedro hands over the parsed spec: a no-op then
    check_tables(spec, evaluation, trial_summary)
    summary = summary_table(evaluation, trial_summary)
    notes = (f"Problem: {spec.problem}; swept: {spec.sweep_param} in {list(spec.sweep_values)}; fixed: {spec.fixed}; "
             f"{trial_count(spec.trials)}; seed {spec.seed}; bases: {spec.basis_mode}. Relative loss as the paper defines it.")
    markdown = summary_markdown(summary, _title(spec), notes)
    figure = boxplot_figure(trial_summary, _title(spec))
    plotly_figure = boxplot_plotly(trial_summary, _title(spec))
    plt.close(figure)  # the dataset saves it; keep pyplot's registry from growing
    return summary, markdown, figure, plotly_figure
