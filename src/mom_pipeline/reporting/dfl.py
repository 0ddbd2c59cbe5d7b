"""Tables and figure of the decision-focused learning benchmark, one noise level at a time.

The benchmark runs one experiment per (noise level, training size), each sweeping the
degree; these functions join their per-trial summaries into methods x (degree, size) tables
of normalized regret (sum of regrets / sum of optimal values over the test samples of a
trial, `metrics.normalized_regret`) and training time.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
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


def dfl_figure(results: pd.DataFrame, title: str):
    """One panel per training size: normalized regret against the degree, one line per method
    (mean over trials, bars: standard deviation); log scale above 1e-3, linear below, so that
    an exact fit (regret 0, least squares at degree 1 without noise) stays on the plot."""
    sizes = sorted(results["n_train"].unique())
    methods = list(dict.fromkeys(results["method"]))
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes) + 1.5, 3.8), squeeze=False, sharey=True)
    for ax, size in zip(axes[0], sizes):
        part = results[results["n_train"] == size]
        for i, method in enumerate(methods):
            stats = part[part["method"] == method].groupby("degree")["normalized_regret"].agg(["mean", "std"])
            # past the palette's colours the lines are told apart by their dashes and markers
            wrap = i // len(PALETTE)
            ax.errorbar(stats.index + (i - len(methods) / 2) * 0.04, stats["mean"], yerr=stats["std"].fillna(0),
                        marker="osD^"[wrap % 4], ms=4, capsize=2, lw=1.2, ls=["-", "--", ":", "-."][wrap % 4],
                        color=PALETTE[i % len(PALETTE)], label=method)
        ax.set_title(f"T = {size}", fontsize=10)
        ax.set_xlabel("polynomial degree")
        ax.set_xticks(sorted(part["degree"].unique()))
        ax.set_yscale("symlog", linthresh=1e-3)
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("normalized regret")
    axes[0][-1].legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.suptitle(title)
    fig.tight_layout()
    return fig
