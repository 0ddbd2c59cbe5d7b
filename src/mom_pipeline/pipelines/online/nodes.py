"""Online nodes: per-step regret of every algorithm on every trial, then curves."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from mom_pipeline.experiments import ExperimentSpec, TrialData, TrialSolutions, parse_spec
from mom_pipeline.experiments.online import run_online_trial
from mom_pipeline.experiments.compute import ComputeConfig, map_trials
from mom_pipeline.experiments.identity import check_generated, check_same_trial
from mom_pipeline.reporting import online_markdown, online_summary, regret_curve_figure, regret_curve_plotly, trial_count


def run_online(problem_data: list[TrialData], solutions: list[TrialSolutions], experiment: ExperimentSpec,
               compute: ComputeConfig) -> pd.DataFrame:
    """One row per (trial, method, step); trials fan out on the configured backend."""
    spec = parse_spec(experiment)  # Kedro hands over the parsed spec: a no-op then
    check_generated(spec, problem_data)
    for trial, solution in zip(problem_data, solutions, strict=True):
        check_same_trial("solutions", solution.data_key, trial, spec.name)
    frames = map_trials(run_online_trial, [(spec, t, s) for t, s in zip(problem_data, solutions)],
                        ComputeConfig.from_params(compute), desc=f"{spec.name}: online")
    return pd.concat(frames, ignore_index=True)


def report_online(online_steps: pd.DataFrame, experiment: ExperimentSpec):
    """Summary (CSV, markdown) and cumulative-regret curves with 95% bands (PNG, plotly)."""
    spec = parse_spec(experiment)  # Kedro hands over the parsed spec: a no-op then
    summary = online_summary(online_steps)
    exclude = spec.curves_exclude
    title = f"Figure {spec.figure}: online {spec.problem.replace('_', ' ')}, {trial_count(spec.trials)}"
    markdown = online_markdown(summary, title, exclude)
    figure = regret_curve_figure(online_steps, title, exclude=exclude)
    plotly_figure = regret_curve_plotly(online_steps, title)
    plt.close(figure)
    return summary, markdown, figure, plotly_figure
