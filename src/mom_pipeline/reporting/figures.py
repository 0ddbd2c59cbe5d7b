"""Figures in the paper's style: box plots over trials per method and setting, and
cumulative-regret curves with confidence bands (matplotlib and plotly versions).

The matplotlib backend is left to the caller (MPLBACKEND, or a notebook's inline backend);
the Makefile and the tests set MPLBACKEND=Agg for headless runs."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.cbook import boxplot_stats
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
# Captions are wrapped to the figure's width (7-point text); no figure is narrower than this.
CAPTION_CHARS_PER_INCH = 17
MIN_FIGURE_WIDTH = 6.0
PLOTLY_CAPTION_CHARS = 110
# kedro-viz lays its own theme over a plotly preview: its margins (a caption below the plotting
# area was cut off) and its first x and y axes only (the other panels kept plotly_white's white
# grid, glaring on its dark theme). So the twin's caption sits inside the plotting area, in a
# band at the bottom that the panels leave free (a fraction of the height for the tick labels,
# then one per caption line), and every axis has one grid colour that reads on both themes.
PLOTLY_TICK_BAND = 0.14
PLOTLY_CAPTION_LINE = 0.035
PLOTLY_HEIGHT = 600
PLOTLY_GRID_COLOR = "rgba(128,128,128,0.3)"
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


@dataclass(frozen=True)
class BoxMetric:
    """What a box figure's y axis shows: the trial-summary column, the axis label (matplotlib
    math text; unicode and <br> for plotly, which kedro-viz renders without MathJax) and a caption
    note saying how it relates to the published figures."""

    column: str
    label: str
    plotly_label: str
    note: str = ""


_SP_RATIO = r"$c^\top(\hat{x} - x^*)\,/\,c^\top x^*$"
_SP_RATIO_TEXT = "cᵀ(x̂ − x*) / cᵀx*"
BOX_METRICS = {
    ("shortest_path", "relative_loss"): BoxMetric(
        "mean_relative_loss", "relative loss " + _SP_RATIO + "\n(per-trial mean)",
        f"relative loss (per-trial mean)<br>{_SP_RATIO_TEXT}",
        "y: the paper's ratio; the published figures show the released code's metric, at least 64x larger "
        "(plot.metric: relative_loss_released)"),
    ("shortest_path", "relative_loss_released"): BoxMetric(
        "mean_relative_loss_released", r"released code's metric: regret $\cdot\ \Sigma_{j \in P^*}\, 1/c_j$"
        "\n(per-trial mean)", "released code's metric (per-trial mean)<br>regret · Σ 1/c<sub>j</sub> over the optimal path",
        f"y: the released code's metric (the published figures' scale), at least 64x the paper's ratio "
        f"{_SP_RATIO_TEXT}"),
    ("knapsack", "relative_loss"): BoxMetric(
        "mean_relative_loss", r"relative loss $c^\top(\hat{x} - x^*)\,/\,\|c\|_2$" "\n(per-trial mean)",
        "relative loss (per-trial mean)<br>cᵀ(x̂ − x*) / ‖c‖₂"),
}
BOX_METRICS[("multi_knapsack", "relative_loss")] = BOX_METRICS[("knapsack", "relative_loss")]


def box_metric(problem: str, metric: str = "relative_loss") -> BoxMetric:
    """The y axis of a box figure of `problem` drawing `metric` (``experiment.plot.metric``)."""
    try:
        return BOX_METRICS[(problem, metric)]
    except KeyError:
        raise ValueError(f"no box figure of {metric!r} for problem {problem!r}; known: {sorted(BOX_METRICS)}") from None


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


def _caption(trials: pd.DataFrame, floored: int, log_scale: bool, share_y: bool, note: str = "") -> str:
    parts = [f"boxes over {trial_count(_n_trials(trials))}, black line: median"]
    if log_scale:
        parts.append(floor_caption(floored))
    parts.append("one y range for all panels" if share_y else "each panel its own y range")
    return "; ".join(parts + ([note] if note else []))


def add_caption(fig, text: str, width_inches: float) -> float:
    """`text` under the figure, wrapped to its width (a one-panel figure clipped one line on
    both sides); returns the fraction of the height it takes, for `tight_layout(rect=...)`."""
    lines = textwrap.wrap(text, width=max(40, int(width_inches * CAPTION_CHARS_PER_INCH)))
    fig.text(0.5, 0.01, "\n".join(lines), ha="center", va="bottom", fontsize=7, color="0.35")
    return (0.02 + 0.13 * len(lines)) / fig.get_figheight()


def boxplot_figure(trials: pd.DataFrame, title: str, metric: BoxMetric | str = "mean_relative_loss",
                   ylabel: str = "relative loss (per-trial mean)", log_scale: bool = True, share_y: bool = False):
    """One panel per setting value, one box per method over the trials, medians in black.
    `metric`: a trial-summary column, or a `BoxMetric` (column, label and caption note).
    `log_scale` (default): a log y-axis, values below LOG_FLOOR drawn at it (caption);
    `share_y`: one y range for every panel (the published figures give each its own)."""
    metric = metric if isinstance(metric, BoxMetric) else BoxMetric(metric, ylabel, ylabel)
    setting = trials["setting"].iloc[0]
    panels, floored = _boxes(trials, metric.column, log_scale)
    width = max(3.2 * len(panels) + 1, MIN_FIGURE_WIDTH)
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 4.2), sharey=share_y, squeeze=False)
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
    axes[0][0].set_ylabel(metric.label)
    fig.suptitle(title)
    caption = _caption(trials, floored, log_scale, share_y, metric.note)
    fig.tight_layout(rect=(0, add_caption(fig, caption, width), 1, 1))
    return fig


def log_ticks(low: float, high: float) -> tuple[list[float], list[str]]:
    """Tick values and labels of a log axis over [low, high] as matplotlib labels them: the
    decades (10⁻⁴), and 2 and 5 times them when the range holds fewer than two decades (plotly
    labelled the minor ticks 2..9 alone and the floor '100μ')."""
    first, last = int(np.floor(np.log10(low))), int(np.ceil(np.log10(high)))
    multiples = (1,) if last - first > 2 else (1, 2, 5)
    values = [m * 10.0 ** e for e in range(first, last + 1) for m in multiples]
    values = [v for v in values if low / 1.0001 <= v <= high * 1.0001] or [10.0 ** first]
    return values, [_power_label(v) for v in values]


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _power_label(value: float) -> str:
    exponent = int(np.floor(np.log10(value) + 1e-9))
    mantissa = round(value / 10.0 ** exponent)
    power = f"10{str(exponent).translate(_SUPERSCRIPT)}"
    return power if mantissa == 1 else f"{mantissa}×{power}"


def _log_range(values: list[np.ndarray]) -> tuple[float, float]:
    data = np.concatenate([v for v in values if len(v)] or [np.array([LOG_FLOOR])])
    return float(data.min()), float(data.max())


def _add_plotly_box(fig: go.Figure, method: str, values: np.ndarray, color: str, col: int) -> None:
    """One method's box in panel `col`, from the statistics matplotlib draws (`boxplot_stats`:
    quartiles, whiskers at 1.5 IQR, outliers): plotly's own quartile methods differ from numpy's
    on a few trials. x = the method's name, so the box is centred on its label; the outline,
    whiskers and median are black as in the PNG, the face carries the method's colour."""
    stats = boxplot_stats(values)[0]
    fig.add_trace(go.Box(x=[method], q1=[stats["q1"]], median=[stats["med"]], q3=[stats["q3"]],
                         lowerfence=[stats["whislo"]], upperfence=[stats["whishi"]], name=method,
                         fillcolor=_rgba(color, 0.6), line=dict(width=1.5, color=MEDIAN_COLOR), legendgroup=method,
                         showlegend=(col == 1)), row=1, col=col)
    if len(stats["fliers"]):
        fig.add_trace(go.Scatter(x=[method] * len(stats["fliers"]), y=stats["fliers"], mode="markers", name=method,
                                 marker=dict(color=color, size=4), legendgroup=method, showlegend=False),
                      row=1, col=col)


def boxplot_plotly(trials: pd.DataFrame, title: str, metric: BoxMetric | str = "mean_relative_loss",
                   ylabel: str = "relative loss (per-trial mean)", log_scale: bool = True,
                   share_y: bool = False) -> go.Figure:
    """The box plots as a plotly figure (kedro-viz previews it), drawn as `boxplot_figure`
    draws them: the same panels, floor, y ranges, colours, black outlines and medians, and log
    ticks labelled as matplotlib labels them."""
    metric = metric if isinstance(metric, BoxMetric) else BoxMetric(metric, ylabel, ylabel)
    setting = trials["setting"].iloc[0]
    panels, floored = _boxes(trials, metric.column, log_scale)
    fig = make_subplots(rows=1, cols=len(panels), shared_yaxes=share_y,
                        subplot_titles=[f"{setting_label(setting)} = {v:g}" for v, _ in panels])
    shared_range = _log_range([v for _, boxes in panels for _, v in boxes])
    for j, (value, boxes) in enumerate(panels, start=1):
        for i, (method, values) in enumerate(boxes):
            if len(values):
                _add_plotly_box(fig, method, values, PALETTE[i % len(PALETTE)], j)
        if log_scale:
            low, high = shared_range if share_y else _log_range([v for _, v in boxes])
            ticks, labels = log_ticks(low, high)
            pad = 0.05 * max(np.log10(high / low), 0.3)
            fig.update_yaxes(type="log", range=[np.log10(low) - pad, np.log10(high) + pad], tickmode="array",
                             tickvals=ticks, ticktext=labels, row=1, col=j)
    fig.update_yaxes(title_text=metric.plotly_label, row=1, col=1)
    lines = textwrap.wrap(_caption(trials, floored, log_scale, share_y, metric.note), width=PLOTLY_CAPTION_CHARS)
    fig.update_yaxes(domain=[PLOTLY_TICK_BAND + PLOTLY_CAPTION_LINE * len(lines), 1.0], gridcolor=PLOTLY_GRID_COLOR)
    fig.update_xaxes(gridcolor=PLOTLY_GRID_COLOR)
    caption = dict(text="<br>".join(lines), xref="paper", yref="paper", x=0.5, y=0, yanchor="bottom",
                   showarrow=False, font=dict(size=10, color="gray"), xanchor="center")
    fig.update_layout(title=title, boxmode="overlay", template="plotly_white", height=PLOTLY_HEIGHT,
                      annotations=list(fig.layout.annotations) + [caption])
    return fig


def _bands(online: pd.DataFrame, column: str):
    for method in _methods(online):
        part = online[online["method"] == method].pivot(index="step", columns="trial", values=column)
        mean = part.mean(axis=1)
        half = 1.96 * part.std(axis=1, ddof=1).fillna(0.0) / np.sqrt(part.shape[1])
        yield method, part.index.to_numpy(), mean.to_numpy(), half.to_numpy()


_REGRET_SUM = r"$\sum_{s \leq t} c_s^\top(x_s - x_s^*)$"
# plotly draws <sub>/<sup> (not TeX): the same sums as the PNG's math text
_REGRET_SUM_TEXT = "Σ<sub>s≤t</sub> c<sub>s</sub>ᵀ(x<sub>s</sub> − x*<sub>s</sub>)"
# The y axis of an online figure (``experiment.plot.regret``): the online step rows' column, its labels
# and a caption note (`BoxMetric` describes any figure's y axis, box or curve).
REGRET_AXES = {
    "raw": BoxMetric("cumulative_regret", "cumulative regret " + _REGRET_SUM,
                     f"cumulative regret {_REGRET_SUM_TEXT}",
                     "y: the raw cumulative regret, as the published figure 5 (plot.regret: relative for the sum of "
                     "relative losses, the paper text's definition)"),
    ("relative", "knapsack"): BoxMetric(
        "cumulative_relative_regret", r"cumulative relative regret $\sum_{s \leq t} c_s^\top(x_s - x_s^*)/\|c_s\|_2$",
        f"cumulative relative regret {_REGRET_SUM_TEXT} / ‖c<sub>s</sub>‖",
        "y: the sum of relative losses, the paper text's definition; the published figure 5 shows the raw regret "
        "(plot.regret: raw)"),
    ("relative", "shortest_path"): BoxMetric(
        "cumulative_relative_regret", r"cumulative relative regret $\sum_{s \leq t} c_s^\top(x_s - x_s^*)/c_s^\top x_s^*$",
        f"cumulative relative regret {_REGRET_SUM_TEXT} / c<sub>s</sub>ᵀx*<sub>s</sub>",
        "y: the sum of relative losses, the paper text's definition (plot.regret: raw for the raw regret)"),
}


def regret_axis(problem: str, regret: str = "raw") -> BoxMetric:
    """The y axis of an online figure of `problem` drawing `regret` ("raw" or "relative")."""
    key = "raw" if regret == "raw" else (regret, problem)
    try:
        return REGRET_AXES[key]
    except KeyError:
        raise ValueError(f"no online figure of {regret!r} regret for problem {problem!r}; known: "
                         f"{sorted(map(str, REGRET_AXES))}") from None


def excluded_note(online: pd.DataFrame, column: str, exclude: tuple) -> str:
    """Why the regret panel leaves `exclude` out, with their final regret against the largest
    curve shown ('' when nothing is left out)."""
    last = online[online["step"] == online["step"].max()].groupby("method")[column].mean()
    left_out = [m for m in _methods(online) if m in exclude]
    if not left_out:
        return ""
    shown = last.drop(left_out, errors="ignore")
    largest = float(shown.max()) if len(shown) else float("nan")
    finals = ", ".join(f"{m} {last[m]:.3g}" + (f" ({last[m] / largest:.0f}x the largest curve)" if largest > 0 else "")
                       for m in left_out)
    return (f"left panel leaves out {', '.join(left_out)} (as the paper does): its regret grows linearly and would "
            f"flatten the other curves; final mean regret at t = {int(online['step'].max())}: {finals}. "
            "The right panel and summary.csv include it")


def look_ahead_note(labels) -> str:
    """The caption note for methods run in the released notebook's look-ahead order ('' for none)."""
    if not labels:
        return ""
    return (f"{', '.join(labels)} in the released notebook's look-ahead order (look_ahead: its update from step t "
            "comes before step t's decision, which so sees its own answer; not an online algorithm)")


def regret_curve_figure(online: pd.DataFrame, title: str, axis: BoxMetric = REGRET_AXES["raw"],
                        exclude: tuple = (), notes: tuple[str, ...] = ()):
    """Mean cumulative regret over trials (`axis`: which regret, `regret_axis`) with 95% confidence
    bands; plus Theta norms. The caption says which regret it shows, which methods the regret
    panel leaves out, and why, then `notes` (how a method was run, e.g. `look_ahead_note`)."""
    width = 11
    fig, (ax, ax_norm) = plt.subplots(1, 2, figsize=(width, 4.2))
    shown = online[~online["method"].isin(exclude)]
    for i, (method, steps, mean, half) in enumerate(_bands(shown, axis.column)):
        ax.plot(steps, mean, label=method, color=PALETTE[i % len(PALETTE)])
        ax.fill_between(steps, mean - half, mean + half, color=PALETTE[i % len(PALETTE)], alpha=0.2)
    ax.set_xlabel("step t")
    ax.set_ylabel(axis.label)
    ax.legend()
    ax.grid(alpha=0.3)
    for i, (method, steps, mean, half) in enumerate(_bands(online, "theta_norm")):
        ax_norm.plot(steps, mean, label=method, color=PALETTE[i % len(PALETTE)])
    ax_norm.set_xlabel("step t")
    ax_norm.set_ylabel(r"$\|\Theta_t\|_F$")
    ax_norm.set_yscale("log")
    ax_norm.legend(fontsize=8)
    ax_norm.grid(alpha=0.3)
    fig.suptitle(title)
    parts = [f"bands: 95% confidence interval of the mean over {trial_count(online['trial'].nunique())}", axis.note,
             excluded_note(online, axis.column, exclude), *notes]
    fig.tight_layout(rect=(0, add_caption(fig, "; ".join(p for p in parts if p), width), 1, 1))
    return fig


def _rgba(color: str, alpha: float) -> str:
    r, g, b = (int(color[k:k + 2], 16) for k in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def regret_curve_plotly(online: pd.DataFrame, title: str, axis: BoxMetric = REGRET_AXES["raw"],
                        exclude: tuple = ()) -> go.Figure:
    """`regret_curve_figure`'s left panel in plotly: mean curves with 95% bands."""
    fig = go.Figure()
    shown = online[~online["method"].isin(exclude)]
    for i, (method, steps, mean, half) in enumerate(_bands(shown, axis.column)):
        color = PALETTE[i % len(PALETTE)]
        fig.add_trace(go.Scatter(x=np.concatenate([steps, steps[::-1]]),
                                 y=np.concatenate([mean + half, (mean - half)[::-1]]), fill="toself",
                                 line=dict(width=0), fillcolor=_rgba(color, 0.2), showlegend=False,
                                 legendgroup=method, hoverinfo="skip", name=f"{method} 95% CI"))
        fig.add_trace(go.Scatter(x=steps, y=mean, name=method, legendgroup=method, line=dict(color=color)))
    fig.update_layout(title=title, xaxis_title="step t", yaxis_title=axis.plotly_label)
    return fig
