"""Tables and figure of the decision-focused learning benchmark, one noise level at a time.

The benchmark runs one experiment per (noise level, training size), each sweeping the
degree; these functions join their per-trial summaries into methods x (degree, size) tables
of normalized regret (sum of regrets / sum of optimal values over the test samples of a
trial, `metrics.normalized_regret`) and training time.
"""

from __future__ import annotations

import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .figures import PALETTE  # noqa: E402


def dfl_results(trial_summaries: list[pd.DataFrame], hyperparameters: list[pd.DataFrame],
                cells: list[dict]) -> pd.DataFrame:
    """One row per (n_train, degree, trial, method): normalized regret and training seconds.

    Args:
        trial_summaries, hyperparameters: the evaluation stage's tables of each experiment;
        cells: each experiment's fixed settings (``n_train``, ``eps_bar``), in the same order.

    ``training_seconds`` is the whole training of a method on a trial: the grid search with
    its final refit when it was tuned, else its single fit.
    """
    if not (len(trial_summaries) == len(hyperparameters) == len(cells)) or not cells:
        raise ValueError(f"one trial summary, hyperparameter table and cell each; got {len(trial_summaries)}, "
                         f"{len(hyperparameters)}, {len(cells)}")
    keys = ["setting_value", "trial", "method"]
    frames = []
    for summary, hyper, cell in zip(trial_summaries, hyperparameters, cells):
        times = hyper[keys + ["fit_seconds", "tuning_seconds"]].rename(columns={"fit_seconds": "refit_seconds"})
        frame = summary[keys + ["normalized_regret"]].merge(times, on=keys, how="left", validate="one_to_one")
        if frame["refit_seconds"].isna().any():
            raise ValueError(f"cell {cell}: a trial summary row has no hyperparameter row")
        frame["training_seconds"] = np.where(frame["tuning_seconds"] > 0, frame["tuning_seconds"],
                                             frame["refit_seconds"])
        frame.insert(0, "n_train", int(cell["n_train"]))
        frame.insert(0, "eps_bar", float(cell["eps_bar"]))
        frames.append(frame.rename(columns={"setting_value": "degree"}))
    results = pd.concat(frames, ignore_index=True)
    results["degree"] = results["degree"].astype(int)
    return results


def dfl_table(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation over trials per (method, n_train, degree), methods in the
    configured order."""
    order = list(dict.fromkeys(results["method"]))
    table = (results.groupby(["method", "n_train", "degree"], sort=False)
             .agg(normalized_regret_mean=("normalized_regret", "mean"),
                  normalized_regret_std=("normalized_regret", "std"),
                  training_seconds_mean=("training_seconds", "mean"),
                  trials=("trial", "nunique"))
             .reset_index())
    table["method"] = pd.Categorical(table["method"], order, ordered=True)
    return table.sort_values(["method", "n_train", "degree"]).reset_index(drop=True).astype({"method": str})


def _pivot_markdown(table: pd.DataFrame, value: str, fmt: str) -> str:
    wide = table.pivot(index="method", columns=["n_train", "degree"], values=value)
    wide = wide.reindex(index=list(dict.fromkeys(table["method"])))
    wide = wide[sorted(wide.columns)]
    header = "| method | " + " | ".join(f"T={n}, deg {d}" for n, d in wide.columns) + " |"
    lines = [header, "|" + "---|" * (len(wide.columns) + 1)]
    for method, row in wide.iterrows():
        best = {col: table[(table["n_train"] == col[0]) & (table["degree"] == col[1])][value].min()
                for col in wide.columns} if value.startswith("normalized") else {}
        cells = []
        for col, v in row.items():
            text = "n/a" if pd.isna(v) else format(v, fmt)
            cells.append(f"**{text}**" if best and not pd.isna(v) and v == best[col] else text)
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def dfl_markdown(table: pd.DataFrame, title: str, notes: str) -> str:
    """Two markdown tables (methods x (size, degree)): mean normalized regret (best in bold),
    then mean training seconds per trial."""
    trials = sorted(table["trials"].unique())
    return "\n\n".join([
        f"## {title}", notes, f"Trials per cell: {', '.join(map(str, trials))}.",
        "### Normalized regret (mean over trials; best of each column in bold)",
        _pivot_markdown(table, "normalized_regret_mean", ".4f"),
        "### Training time per trial in seconds (tuning grid and final fit)",
        _pivot_markdown(table, "training_seconds_mean", ".2f"),
    ]) + "\n"


def dfl_figure(table: pd.DataFrame, title: str):
    """One panel per training size: normalized regret against the degree, one line per method
    of the summary table `table` (`dfl_table`: mean over trials, bars: standard deviation, none
    where it is unknown, cut at 0 below); the y axis of `_regret_axis`, so that an exact fit
    (regret 0, least squares at degree 1 without noise) stays on the plot. The figure grows
    taller with the number of methods, so that the legend fits."""
    sizes = sorted(table["n_train"].unique())
    methods = list(dict.fromkeys(table["method"]))
    height = max(3.8, 0.19 * len(methods) + 0.6)
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes) + 1.5, height), squeeze=False, sharey=True)
    for ax, size in zip(axes[0], sizes):
        part = table[table["n_train"] == size]
        for i, method in enumerate(methods):
            stats = (part[part["method"] == method].set_index("degree").sort_index()
                     [["normalized_regret_mean", "normalized_regret_std"]].set_axis(["mean", "std"], axis=1))
            # past the palette's colours the lines are told apart by their dashes and markers
            wrap = i // len(PALETTE)
            spread = stats["std"].fillna(0)
            ax.errorbar(stats.index + (i - len(methods) / 2) * 0.04, stats["mean"],
                        yerr=[spread.clip(upper=stats["mean"].clip(lower=0)), spread],
                        marker="osD^"[wrap % 4], ms=4, capsize=2, lw=1.2, ls=["-", "--", ":", "-."][wrap % 4],
                        color=PALETTE[i % len(PALETTE)], label=method)
        ax.set_title(f"T = {size}", fontsize=10)
        ax.set_xlabel("polynomial degree")
        ax.set_xticks(sorted(part["degree"].unique()))
        _regret_axis(ax, float((table["normalized_regret_mean"] - table["normalized_regret_std"].fillna(0)).min()))
    axes[0][0].set_ylabel("normalized regret")
    axes[0][-1].legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.suptitle(title)
    fig.tight_layout()
    return fig


#: Drawn on their own in the family figure as well as inside their families: the issue's
#: question is how MOM from x* alone compares with CaVE, the other method learning from x*.
INDIVIDUAL_METHODS = ("MOM x*", "CaVE")
_MEMBER_MARKERS = "osD^vP"


def with_families(table: pd.DataFrame, families: dict[str, str]) -> pd.DataFrame:
    """`table` with a ``family`` column after ``method`` (`families`: method label -> family,
    `methods.registry.method_family`); a method without a family is an error naming it."""
    missing = sorted(set(table["method"]) - set(families))
    if missing:
        raise ValueError(f"no method family for {missing}; families are known for {sorted(families)}")
    out = table.drop(columns="family", errors="ignore")
    out.insert(out.columns.get_loc("method") + 1, "family", out["method"].map(families))
    return out


def family_best(table: pd.DataFrame) -> pd.DataFrame:
    """Per (family, n_train, degree): the family's method with the lowest mean normalized
    regret (ties: the first in the table's order), one row each with that method's mean."""
    if "family" not in table:
        raise ValueError("the summary table has no family column (add it with with_families)")
    rows = table.dropna(subset=["normalized_regret_mean"])
    best = rows.loc[rows.groupby(["family", "n_train", "degree"], sort=False)["normalized_regret_mean"].idxmin()]
    return best[["family", "n_train", "degree", "method", "normalized_regret_mean"]].reset_index(drop=True)


def _regret_axis(ax, lowest: float) -> None:
    """Symlog with a linear part below 1e-3, so that a regret of exactly 0 stays on the plot;
    a log axis with ticks at 1, 2 and 5 of each decade when every value is at least 1e-3
    (matplotlib falls back to linear ticks on a range of less than a decade)."""
    if lowest >= 1e-3:
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    else:
        ax.set_yscale("symlog", linthresh=1e-3)
    ax.grid(alpha=0.3, which="both")


def dfl_family_figure(tables: dict[str, pd.DataFrame], title: str, families: tuple[str, ...],
                      individual: tuple[str, ...] = INDIVIDUAL_METHODS):
    """Normalized regret against the degree, one line per method family: a row of panels per
    noise level (`tables`: panel-row title -> summary table with a family column), a column
    per training size. A family's point is its best method's mean in that cell, and the
    point's marker names which method (legend); the methods in `individual` are also drawn
    on their own, in black. `families` orders the lines (`methods.registry.FAMILIES`)."""
    if not tables:
        raise ValueError("no summary table to draw")
    best = {row: family_best(table) for row, table in tables.items()}
    sizes = sorted({int(n) for table in tables.values() for n in table["n_train"].unique()})
    present = [f for f in families if any((b["family"] == f).any() for b in best.values())]
    unknown = sorted({f for b in best.values() for f in b["family"]} - set(families))
    if unknown:
        raise ValueError(f"families {unknown} are not among the families to draw {list(families)}")
    members = {f: list(dict.fromkeys(m for table in tables.values() for m in table.loc[table["family"] == f, "method"]))
               for f in present}
    fig, axes = plt.subplots(len(tables), len(sizes), figsize=(3.9 * len(sizes) + 3.2, 3.3 * len(tables)),
                             squeeze=False, sharey="row")
    handles: dict[str, object] = {}
    for (row_title, table), ax_row in zip(tables.items(), axes):
        for ax, size in zip(ax_row, sizes):
            part = best[row_title][best[row_title]["n_train"] == size]
            for i, family in enumerate(present):
                points = part[part["family"] == family].sort_values("degree")
                if points.empty:
                    continue
                color = PALETTE[i % len(PALETTE)]
                x = points["degree"] + (i - len(present) / 2) * 0.05
                handles[family] = ax.plot(x, points["normalized_regret_mean"], color=color, lw=1.6)[0]
                for k, method in enumerate(members[family]):
                    chosen = points["method"] == method
                    if chosen.any():
                        handles[f"{family}\0{method}"] = ax.scatter(
                            x[chosen], points.loc[chosen, "normalized_regret_mean"], color=color, s=22,
                            marker=_MEMBER_MARKERS[k % len(_MEMBER_MARKERS)], zorder=3)
            own = table[table["n_train"] == size]
            for method, style in zip(individual, ("-", "--", ":")):
                stats = own[own["method"] == method].sort_values("degree")
                if not stats.empty:
                    handles[f"\0{method}"] = ax.plot(stats["degree"], stats["normalized_regret_mean"], color="black",
                                                     ls=style, lw=1.0, marker="x", ms=4, zorder=4)[0]
            ax.set_title(f"{row_title}, T = {size}", fontsize=9)
            ax.set_xticks(sorted(table["degree"].unique()))
            _regret_axis(ax, float(table["normalized_regret_mean"].min()))
        ax_row[0].set_ylabel("normalized regret")
    for ax in axes[-1]:
        ax.set_xlabel("polynomial degree")
    # the legend: each family's line, then the marker of each of its methods that is best somewhere
    labels, entries = [], []
    for family in present:
        if family in handles:
            entries.append(handles[family]), labels.append(family)
        for method in members[family]:
            if f"{family}\0{method}" in handles:
                entries.append(handles[f"{family}\0{method}"]), labels.append(f"    {method}")
    for method in individual:
        if f"\0{method}" in handles:
            entries.append(handles[f"\0{method}"]), labels.append(f"{method} on its own")
    legend_share = 2.9 / fig.get_figwidth()  # the legend's column, right of the panels
    fig.legend(entries, labels, fontsize=7, loc="center left", bbox_to_anchor=(1 - legend_share, 0.5), frameon=False)
    note = (f"each family: its best method in each cell (lowest mean normalized regret over trials; the marker "
            f"names it); black: {' and '.join(individual)} on their own")
    fig.suptitle(f"{title}\n" + textwrap.fill(note, width=int(15 * fig.get_figwidth())), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1 - legend_share, 1))
    return fig
