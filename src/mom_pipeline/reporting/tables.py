"""Summary tables: median and interquartile range per method and setting, and more."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..metrics import normalized_regret_by
from .figures import setting_label

KEYS = ["experiment", "setting", "setting_value", "method"]


def _q(p):
    def quantile(values):
        return float(np.nanquantile(values, p)) if np.isfinite(values).any() else np.nan

    quantile.__name__ = f"q{int(p * 100)}"
    return quantile


def summary_table(evaluation: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """Per (setting, method): distribution over test samples and over trials.

    Columns: median/q25/q75/mean relative loss over all test samples, median and IQR of the
    per-trial mean relative loss (what the box plots show), the released code's shortest-path
    quantity (labelled), normalized regret, exact-solution rate, median fit time.
    """
    method_order = {m: i for i, m in enumerate(dict.fromkeys(evaluation["method"]))}
    per_sample = evaluation.groupby(KEYS, sort=False).agg(
        n_trials=("trial", "nunique"),
        n_samples=("relative_loss", "size"),
        median_relative_loss=("relative_loss", "median"),
        q25_relative_loss=("relative_loss", _q(0.25)),
        q75_relative_loss=("relative_loss", _q(0.75)),
        mean_relative_loss=("relative_loss", "mean"),
        mean_relative_loss_released=("relative_loss_released", "mean"),
        exact_rate=("exact", "mean"),
    )
    per_sample["normalized_regret"] = normalized_regret_by(evaluation, KEYS)
    per_trial = trials.groupby(KEYS, sort=False).agg(
        trial_median=("mean_relative_loss", "median"),
        trial_q25=("mean_relative_loss", _q(0.25)),
        trial_q75=("mean_relative_loss", _q(0.75)),
        median_fit_seconds=("fit_seconds", "median"),
    )
    out = per_sample.join(per_trial).reset_index()
    out["_order"] = out["method"].map(method_order)
    return out.sort_values(["setting_value", "_order"]).drop(columns="_order").reset_index(drop=True)


def summary_markdown(summary: pd.DataFrame, title: str, notes: str = "") -> str:
    """A markdown report of `summary_table`: one table per setting value."""
    lines = [f"# {title}", ""]
    if notes:
        lines += [notes, ""]
    for value, part in summary.groupby("setting_value", sort=True):
        setting = part["setting"].iloc[0]
        lines += [f"## {setting_label(setting)} = {value:g}", "",  # the paper's name: no underscores to italicize
                  "| method | median rel. loss [IQR] (test samples) | mean rel. loss | per-trial mean: median [IQR] "
                  "| normalized regret | exact rate | fit s (median) |",
                  "|---|---|---|---|---|---|---|"]
        for _, r in part.iterrows():
            lines.append(
                f"| {r['method']} | {r['median_relative_loss']:.4g} [{r['q25_relative_loss']:.3g}, "
                f"{r['q75_relative_loss']:.3g}] | {r['mean_relative_loss']:.4g} | {r['trial_median']:.4g} "
                f"[{r['trial_q25']:.3g}, {r['trial_q75']:.3g}] | {r['normalized_regret']:.4g} | "
                f"{r['exact_rate']:.3f} | {r['median_fit_seconds']:.3g} |")
        lines.append("")
    if "relative_loss_released" in summary and summary["experiment"].str.len().gt(0).all():
        lines += ["`mean_relative_loss_released` in the CSV is the quantity the authors' released code "
                  "computed for shortest path (regret times the sum of 1/c_j over the optimal path; "
                  "see docs/paper_notes.md), kept for comparison with the published figures.", ""]
    return "\n".join(lines)


def online_summary(online: pd.DataFrame) -> pd.DataFrame:
    """Per method: final cumulative regret, raw (the published figure 5's y axis) and relative (the
    paper text's sum of relative losses), each as the mean over trials with its 95% CI half-width;
    mistakes, final norm and seconds per trial."""
    last = online.sort_values("step").groupby(["experiment", "method", "trial"], sort=False).tail(1)
    grouped = last.groupby(["experiment", "method"], sort=False)
    out = grouped.agg(
        n_trials=("trial", "nunique"),
        final_cumulative_regret=("cumulative_regret", "mean"),
        final_cumulative_regret_sd=("cumulative_regret", "std"),
        final_cumulative_relative_regret=("cumulative_relative_regret", "mean"),
        final_cumulative_relative_regret_sd=("cumulative_relative_regret", "std"),
        final_mistakes=("mistakes", "mean"),
        final_theta_norm=("theta_norm", "mean"),
        seconds=("seconds", "mean"),
    ).reset_index()
    out["ci95_halfwidth"] = 1.96 * out.pop("final_cumulative_regret_sd") / np.sqrt(out["n_trials"])
    out["relative_ci95_halfwidth"] = 1.96 * out.pop("final_cumulative_relative_regret_sd") / np.sqrt(out["n_trials"])
    return out


def online_markdown(summary: pd.DataFrame, title: str, excluded: tuple[str, ...] = ()) -> str:
    """A markdown report of `online_summary`; `excluded`: methods the curves figure leaves out."""
    lines = [f"# {title}", "", "| method | final cumulative regret (mean ± 95% CI) | final cumulative relative regret "
             "| mistakes | final ‖Θ‖<sub>F</sub> | seconds per trial |", "|---|---|---|---|---|---|"]
    for _, r in summary.iterrows():
        lines.append(f"| {r['method']} | {r['final_cumulative_regret']:.4g} ± {r['ci95_halfwidth']:.2g} | "
                     f"{r['final_cumulative_relative_regret']:.4g} ± {r['relative_ci95_halfwidth']:.2g} | "
                     f"{r['final_mistakes']:.1f} | {r['final_theta_norm']:.3g} | {r['seconds']:.3g} |")
    lines += ["", "Cumulative regret: the sum of `c_t'(x_t - x*_t)` over the steps (the y axis of the published "
              "figure 5); relative: the sum of the relative losses (the paper text's definition)."]
    if excluded:
        lines += ["", f"The curves figure leaves out {', '.join(excluded)} (as the paper does: its regret grows "
                  "linearly and would flatten the other curves); the table and the plotly figure include it."]
    return "\n".join(lines) + "\n"


# What each figure reports to the experiment tracker, per method and setting.
TRACKED_COLUMNS = ("median_relative_loss", "normalized_regret", "exact_rate", "median_fit_seconds")
ONLINE_TRACKED_COLUMNS = ("final_cumulative_regret", "final_cumulative_relative_regret", "final_mistakes", "seconds")


def metric_name(*parts) -> str:
    """A tracker-safe metric name: parts joined by '.', characters outside [A-Za-z0-9_-./ :]
    replaced ('SPO+' -> 'SPOplus')."""
    text = ".".join(str(p).replace("+", "plus") for p in parts)
    return re.sub(r"[^/\w.\- :]", "_", text)


def summary_metrics(summary: pd.DataFrame) -> dict[str, dict]:
    """`summary_table` as tracker metrics: `<method>.<setting>_<value>.<column>` -> value
    (step 0), for every column of TRACKED_COLUMNS; NaN values are left out."""
    out = {}
    for _, r in summary.iterrows():
        for column in TRACKED_COLUMNS:
            value = float(r[column])
            if np.isfinite(value):
                out[metric_name(r["method"], f"{r['setting']}_{r['setting_value']:g}", column)] = {"value": value,
                                                                                                   "step": 0}
    return out


def online_metrics(summary: pd.DataFrame) -> dict[str, dict]:
    """`online_summary` as tracker metrics: `<method>.<column>` -> value (step 0)."""
    return {metric_name(r["method"], column): {"value": float(r[column]), "step": 0}
            for _, r in summary.iterrows() for column in ONLINE_TRACKED_COLUMNS if np.isfinite(float(r[column]))}
