"""Print compact markdown tables of the latest results of each figure (for the README).

Rows: methods; columns: settings; cells: median over trials of the per-trial mean relative
loss (the quantity of the box plots), and for shortest path also the released code's scale.
Usage: python scripts/results_tables.py [fig1 fig2 ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def latest(path: Path) -> Path:
    versions = sorted(p for p in path.iterdir() if p.is_dir())
    return versions[-1] / path.name


def table(figure: str) -> str:
    summary = pd.read_csv(latest(ROOT / "data" / "08_reporting" / figure / "summary.csv"))
    setting = summary["setting"].iloc[0]
    out = []
    for column, label in [("trial_median", "median over trials of the mean relative loss"),
                          ("mean_relative_loss_released", "released code's shortest-path scale (mean)"),
                          ("exact_rate", "exact-solution rate")]:
        if column == "mean_relative_loss_released" and not summary["experiment"].iloc[0].startswith(("fig1", "fig2", "fig7", "formulations")):
            continue
        pivot = summary.pivot(index="method", columns="setting_value", values=column)
        pivot = pivot.loc[list(dict.fromkeys(summary["method"]))]
        header = "| method | " + " | ".join(f"{setting}={v:g}" for v in pivot.columns) + " |"
        lines = [f"*{figure}: {label}*", "", header, "|---|" + "---|" * len(pivot.columns)]
        for method, row in pivot.iterrows():
            lines.append(f"| {method} | " + " | ".join(f"{v:.4g}" for v in row) + " |")
        out.append("\n".join(lines))
    n_trials = int(summary["n_trials"].max())
    return f"#### {figure} ({n_trials} trials)\n\n" + "\n\n".join(out) + "\n"


if __name__ == "__main__":
    for fig in sys.argv[1:] or ["fig1", "fig2", "fig3", "fig4", "fig6", "fig7", "formulations"]:
        try:
            print(table(fig))
        except (FileNotFoundError, IndexError) as exc:
            print(f"#### {fig}: no results ({exc})\n")
