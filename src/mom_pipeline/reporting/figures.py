"""Figures in the paper's style: box plots over trials per method and setting, and
cumulative-regret curves with confidence bands (matplotlib and plotly versions).

The matplotlib backend is left to the caller (MPLBACKEND, or a notebook's inline backend);
the Makefile and the tests set MPLBACKEND=Agg for headless runs."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf"]
MEDIAN_COLOR = "black"
# Relative losses are often exactly 0 (the method recovers the optimal decision): on a log
# axis they are drawn at this floor, and the caption says so.
LOG_FLOOR = 1e-4
# The paper's names for the swept parameters.
SETTING_LABELS = {"degree": "degree", "alpha_bar": "attack power", "n_train": "training size T"}


def setting_label(setting: str) -> str:
    """The paper's name of a swept parameter (the parameter's own name if it has none)."""
    return SETTING_LABELS.get(setting, setting)


def trial_count(n: int) -> str:
    return f"{n} trial" if n == 1 else f"{n} trials"


def _n_trials(frame: pd.DataFrame) -> int:
    return int(frame.groupby(["setting_value", "method"])["trial"].nunique().max())


def _methods(frame: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(frame["method"]))


def _boxes(trials: pd.DataFrame, metric: str, log_scale: bool):
    """(setting value, [(method, values)]) per panel; on a log axis values below the floor
    are raised to it. Also the number of values that were raised."""
    panels, floored = [], 0
    methods = _methods(trials)
    for value in sorted(trials["setting_value"].unique()):
        part = trials[trials["setting_value"] == value]
        boxes = []
        for method in methods:
            values = part.loc[part["method"] == method, metric].dropna().to_numpy(dtype=float)
            if log_scale:
                floored += int((values < LOG_FLOOR).sum())
                values = np.maximum(values, LOG_FLOOR)
            boxes.append((method, values))
        panels.append((value, boxes))
    return panels, floored


def floor_caption(floored: int) -> str:
    return (f"log axis: {floored} value(s) below {LOG_FLOOR:g} (e.g. exactly 0) drawn at {LOG_FLOOR:g}"
            if floored else "log axis")


def _caption(trials: pd.DataFrame, floored: int, log_scale: bool) -> str:
    text = f"boxes over {trial_count(_n_trials(trials))}"
    return f"{text}; {floor_caption(floored)}" if log_scale else text


def boxplot_figure(trials: pd.DataFrame, title: str, metric: str = "mean_relative_loss",
                   ylabel: str = "relative loss (per-trial mean)", log_scale: bool = True):
    """One panel per setting value, one box per method over the trials, medians in black.
    `log_scale` (default): a log y-axis, values below LOG_FLOOR drawn at it (caption)."""
    setting = trials["setting"].iloc[0]
    panels, floored = _boxes(trials, metric, log_scale)
    # Each setting on its own scale: losses differ by orders of magnitude across degrees.
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels) + 1, 4.0), sharey=False, squeeze=False)
    for ax, (value, boxes) in zip(axes[0], panels):
        box = ax.boxplot([v for _, v in boxes], patch_artist=True, widths=0.6,
                         medianprops=dict(color=MEDIAN_COLOR, linewidth=2),
                         flierprops=dict(marker=".", markersize=4))
        ax.set_xticks(range(1, len(boxes) + 1), [m for m, _ in boxes], rotation=45, ha="right", fontsize=8)
        for patch, color in zip(box["boxes"], PALETTE * 2):
            patch.set_facecolor(color)
            patch.set_alpha(0.6)
        ax.set_title(f"{setting_label(setting)} = {value:g}", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        if log_scale:
            ax.set_yscale("log")
    axes[0][0].set_ylabel(ylabel)
    fig.suptitle(title)
    fig.text(0.5, 0.01, _caption(trials, floored, log_scale) + "; black line: median", ha="center", va="bottom", fontsize=7, color="0.35")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def boxplot_plotly(trials: pd.DataFrame, title: str, metric: str = "mean_relative_loss",
                   ylabel: str = "relative loss (per-trial mean)", log_scale: bool = True) -> go.Figure:
    """The box plots as a plotly figure (kedro-viz previews it): the same panels, floor and
    colours as `boxplot_figure`, each box centred on its method's label."""
    setting = trials["setting"].iloc[0]
    panels, floored = _boxes(trials, metric, log_scale)
    fig = make_subplots(rows=1, cols=len(panels), shared_yaxes=False,
                        subplot_titles=[f"{setting_label(setting)} = {v:g}" for v, _ in panels])
    for j, (value, boxes) in enumerate(panels, start=1):
        for i, (method, values) in enumerate(boxes):
            # x = the method's name: one box per category, centred on its label.
            fig.add_trace(go.Box(x=[method] * len(values), y=values, name=method, boxpoints="outliers",
                                 marker_color=PALETTE[i % len(PALETTE)], line=dict(width=1.5),
                                 legendgroup=method, showlegend=(j == 1)), row=1, col=j)
        if log_scale:
            fig.update_yaxes(type="log", row=1, col=j)
    fig.update_yaxes(title_text=ylabel, row=1, col=1)
    caption = dict(text=_caption(trials, floored, log_scale), xref="paper", yref="paper", x=0.5, y=-0.3,
                   showarrow=False, font=dict(size=10, color="gray"), xanchor="center")
    fig.update_layout(title=title, boxmode="overlay", margin=dict(b=90),
                      annotations=list(fig.layout.annotations) + [caption])
    return fig


def _bands(online: pd.DataFrame, column: str):
    for method in _methods(online):
        part = online[online["method"] == method].pivot(index="step", columns="trial", values=column)
        mean = part.mean(axis=1)
        half = 1.96 * part.std(axis=1, ddof=1).fillna(0.0) / np.sqrt(part.shape[1])
        yield method, part.index.to_numpy(), mean.to_numpy(), half.to_numpy()


def regret_curve_figure(online: pd.DataFrame, title: str, column: str = "cumulative_relative_regret",
                        exclude: tuple = ()):
    """Mean cumulative regret over trials with 95% confidence bands; plus Theta norms."""
    fig, (ax, ax_norm) = plt.subplots(1, 2, figsize=(11, 4))
    shown = online[~online["method"].isin(exclude)]
    for i, (method, steps, mean, half) in enumerate(_bands(shown, column)):
        ax.plot(steps, mean, label=method, color=PALETTE[i % len(PALETTE)])
        ax.fill_between(steps, mean - half, mean + half, color=PALETTE[i % len(PALETTE)], alpha=0.2)
    ax.set_xlabel("step t")
    ax.set_ylabel("cumulative regret (sum of relative losses)")
    ax.legend()
    ax.grid(alpha=0.3)
    for i, (method, steps, mean, half) in enumerate(_bands(online, "theta_norm")):
        ax_norm.plot(steps, mean, label=method, color=PALETTE[i % len(PALETTE)])
    ax_norm.set_xlabel("step t")
    ax_norm.set_ylabel("||Theta_t||_F")
    ax_norm.set_yscale("log")
    ax_norm.legend(fontsize=8)
    ax_norm.grid(alpha=0.3)
    fig.suptitle(title)
    fig.text(0.5, 0.01, f"bands: 95% confidence interval of the mean over {trial_count(online['trial'].nunique())}",
             ha="center", va="bottom", fontsize=7, color="0.35")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def _rgba(color: str, alpha: float) -> str:
    r, g, b = (int(color[k:k + 2], 16) for k in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def regret_curve_plotly(online: pd.DataFrame, title: str, column: str = "cumulative_relative_regret",
                        exclude: tuple = ()) -> go.Figure:
    """`regret_curve_figure`'s left panel in plotly: mean curves with 95% bands."""
    fig = go.Figure()
    shown = online[~online["method"].isin(exclude)]
    for i, (method, steps, mean, half) in enumerate(_bands(shown, column)):
        color = PALETTE[i % len(PALETTE)]
        fig.add_trace(go.Scatter(x=np.concatenate([steps, steps[::-1]]),
                                 y=np.concatenate([mean + half, (mean - half)[::-1]]), fill="toself",
                                 line=dict(width=0), fillcolor=_rgba(color, 0.2), showlegend=False,
                                 legendgroup=method, hoverinfo="skip", name=f"{method} 95% CI"))
        fig.add_trace(go.Scatter(x=steps, y=mean, name=method, legendgroup=method, line=dict(color=color)))
    fig.update_layout(title=title, xaxis_title="step t", yaxis_title="cumulative regret (sum of relative losses)")
    return fig
