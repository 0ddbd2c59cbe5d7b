"""Online nodes: per-step regret of every algorithm on every trial, then curves."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from mom_pipeline.experiments import TrialData, TrialSolutions, parse_spec
from mom_pipeline.experiments.online import run_online_trial
from mom_pipeline.experiments.compute import ComputeConfig, map_trials
from mom_pipeline.experiments.train import parse_methods
from mom_pipeline.reporting import online_markdown, online_summary, regret_curve_figure, regret_curve_plotly


def run_online(problem_data: list[TrialData], solutions: list[TrialSolutions], experiment: dict,
               compute: dict) -> pd.DataFrame:
    """One row per (trial, method, step); trials fan out on the configured backend."""
    spec = parse_spec(experiment)
    parse_methods(spec)
    frames = map_trials(run_online_trial, [(spec, t, s) for t, s in zip(problem_data, solutions)],
                        ComputeConfig.from_params(compute), desc=f"{spec.name}: online")
    return pd.concat(frames, ignore_index=True)


def report_online(online_steps: pd.DataFrame, experiment: dict):
    """Summary (CSV, markdown) and cumulative-regret curves with 95% bands (PNG, plotly)."""
    spec = parse_spec(experiment)
    summary = online_summary(online_steps)
    exclude = tuple(spec.extra.get("curves_exclude", ()))
    title = f"Figure {spec.figure}: online {spec.problem.replace('_', ' ')}, {spec.trials} trials"
    markdown = online_markdown(summary, title, exclude)
    figure = regret_curve_figure(online_steps, title, exclude=exclude)
    plotly_figure = regret_curve_plotly(online_steps, title)
    plt.close(figure)
    return summary, markdown, figure, plotly_figure
