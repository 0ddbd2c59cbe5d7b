"""Online nodes: per-step regret of every algorithm on every trial, then curves."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from mom_pipeline.experiments import TrialData, TrialSolutions, parse_spec
from mom_pipeline.experiments.online import run_online_trial
from mom_pipeline.experiments.compute import ComputeConfig, map_trials
from mom_pipeline.experiments.train import parse_methods
from mom_pipeline.reporting import online_summary, regret_curve_figure, regret_curve_plotly, trial_count


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
    title = f"Figure {spec.figure}: online {spec.problem.replace('_', ' ')}, {trial_count(spec.trials)}"
    lines = [f"# {title}", "", "| method | final cumulative regret (mean ± 95% CI) | mistakes | final ||Theta||_F "
             "| seconds per trial |", "|---|---|---|---|---|"]
    for _, r in summary.iterrows():
        lines.append(f"| {r['method']} | {r['final_cumulative_regret']:.4g} ± {r['ci95_halfwidth']:.2g} | "
                     f"{r['final_mistakes']:.1f} | {r['final_theta_norm']:.3g} | {r['seconds']:.3g} |")
    if exclude:
        lines += ["", f"The curves figure leaves out {', '.join(exclude)} (as the paper does: its regret grows "
                  "linearly and would flatten the other curves); the table and the plotly figure include it."]
    figure = regret_curve_figure(online_steps, title, exclude=exclude)
    plotly_figure = regret_curve_plotly(online_steps, title)
    plt.close(figure)
    return summary, "\n".join(lines) + "\n", figure, plotly_figure
