"""Figures in the paper's style: box plots over trials per method and setting, and
cumulative-regret curves with confidence bands (matplotlib and plotly versions)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless: figures are written to files
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import plotly.graph_objects as go  # noqa: E402
from plotly.subplots import make_subplots  # noqa: E402

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf"]


def _methods(frame: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(frame["method"]))


def boxplot_figure(trials: pd.DataFrame, title: str, metric: str = "mean_relative_loss",
                   ylabel: str = "relative loss (per-trial mean)", log_scale: bool = False):
    """One panel per setting value, one box per method over the trials."""
    values = sorted(trials["setting_value"].unique())
    methods = _methods(trials)
    setting = trials["setting"].iloc[0]
    # Each setting on its own scale: losses differ by orders of magnitude across degrees.
    fig, axes = plt.subplots(1, len(values), figsize=(3.2 * len(values) + 1, 3.6), sharey=False, squeeze=False)
    for ax, value in zip(axes[0], values):
        part = trials[trials["setting_value"] == value]
        data = [part.loc[part["method"] == m, metric].dropna().to_numpy() for m in methods]
        box = ax.boxplot(data, patch_artist=True, widths=0.6)
        ax.set_xticks(range(1, len(methods) + 1), methods, rotation=45, ha="right", fontsize=8)
        for patch, color in zip(box["boxes"], PALETTE * 2):
            patch.set_facecolor(color)
            patch.set_alpha(0.6)
        ax.set_title(f"{setting} = {value:g}", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        if log_scale:
            ax.set_yscale("log")
    axes[0][0].set_ylabel(ylabel)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def boxplot_plotly(trials: pd.DataFrame, title: str, metric: str = "mean_relative_loss") -> go.Figure:
    """The box plots as a plotly figure (kedro-viz previews it)."""
    values = sorted(trials["setting_value"].unique())
    setting = trials["setting"].iloc[0]
    fig = make_subplots(rows=1, cols=len(values), shared_yaxes=False,
                        subplot_titles=[f"{setting} = {v:g}" for v in values])
    for j, value in enumerate(values, start=1):
        part = trials[trials["setting_value"] == value]
        for i, method in enumerate(_methods(trials)):
            fig.add_trace(go.Box(y=part.loc[part["method"] == method, metric], name=method,
                                 marker_color=PALETTE[i % len(PALETTE)], showlegend=(j == 1)), row=1, col=j)
    fig.update_layout(title=title, yaxis_title="relative loss (per-trial mean)", boxmode="group")
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
    ax.set_xlabel("t")
    ax.set_ylabel("cumulative regret (sum of relative losses)")
    ax.legend()
    ax.grid(alpha=0.3)
    for i, (method, steps, mean, half) in enumerate(_bands(online, "theta_norm")):
        ax_norm.plot(steps, mean, label=method, color=PALETTE[i % len(PALETTE)])
    ax_norm.set_xlabel("t")
    ax_norm.set_ylabel("||Theta_t||_F")
    ax_norm.set_yscale("log")
    ax_norm.legend(fontsize=8)
    ax_norm.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def regret_curve_plotly(online: pd.DataFrame, title: str, column: str = "cumulative_relative_regret") -> go.Figure:
    fig = go.Figure()
    for i, (method, steps, mean, half) in enumerate(_bands(online, column)):
        color = PALETTE[i % len(PALETTE)]
        fig.add_trace(go.Scatter(x=steps, y=mean, name=method, line=dict(color=color)))
        fig.add_trace(go.Scatter(x=np.concatenate([steps, steps[::-1]]),
                                 y=np.concatenate([mean + half, (mean - half)[::-1]]), fill="toself",
                                 line=dict(width=0), fillcolor=color, opacity=0.2, showlegend=False,
                                 name=f"{method} 95% CI"))
    fig.update_layout(title=title, xaxis_title="t", yaxis_title="cumulative regret")
    return fig
