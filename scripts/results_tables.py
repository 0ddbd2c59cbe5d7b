"""Print compact markdown tables of the latest results of each figure (for docs/results.md).

Rows: methods; columns: settings; cells: median over trials of the per-trial mean relative
loss (the quantity of the box plots), and for shortest path also the released code's scale;
figure 5 (online): the final cumulative regret with its 95% confidence interval.
Usage:
    python scripts/results_tables.py [fig1 fig2 ...]            # the default run
    python scripts/results_tables.py --reports data/08_reporting/text_features fig3 fig4 fig5 fig6
                                                                 # the U[0,1] sensitivity run
                                                                 # (kedro run ... --env text_features)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ["fig1", "fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "formulations"]
SHORTEST_PATH = ("fig1", "fig2", "fig7", "formulations")


def latest(path: Path) -> Path:
    versions = sorted(p for p in path.iterdir() if p.is_dir())
    if not versions:
        raise FileNotFoundError(f"no saved version under {path}")
    return versions[-1] / path.name


def online_table(figure: str, summary: pd.DataFrame, source: str) -> str:
    lines = [f"#### {figure} ({int(summary['n_trials'].max())} trials; {source})", "",
             "| method | cumulative regret at the end (mean ± 95% CI) | cumulative relative regret | mistakes "
             "| final norm of Theta | seconds per trial |",
             "|---|---|---|---|---|---|"]
    for _, r in summary.iterrows():
        lines.append(f"| {r['method']} | {r['final_cumulative_regret']:.3g} ± {r['ci95_halfwidth']:.2g} | "
                     f"{r['final_cumulative_relative_regret']:.3g} ± {r['relative_ci95_halfwidth']:.2g} | "
                     f"{r['final_mistakes']:.0f} | {r['final_theta_norm']:.3g} | {r['seconds']:.3g} |")
    return "\n".join(lines) + "\n"


def table(figure: str, reports: Path) -> str:
    path = latest(reports / figure / "summary.csv")
    summary = pd.read_csv(path)
    source = f"`{path.parent.relative_to(ROOT) if path.is_relative_to(ROOT) else path.parent}`"
    if "setting" not in summary:
        return online_table(figure, summary, source)
    setting = summary["setting"].iloc[0]
    out = []
    for column, label in [("trial_median", "median over trials of the mean relative loss"),
                          ("mean_relative_loss_released", "released code's shortest-path scale (mean)"),
                          ("exact_rate", "exact-solution rate")]:
        if column == "mean_relative_loss_released" and not figure.startswith(SHORTEST_PATH):
            continue
        pivot = summary.pivot(index="method", columns="setting_value", values=column)
        pivot = pivot.loc[list(dict.fromkeys(summary["method"]))]
        header = "| method | " + " | ".join(f"{setting}={v:g}" for v in pivot.columns) + " |"
        lines = [f"*{figure}: {label}*", "", header, "|---|" + "---|" * len(pivot.columns)]
        for method, row in pivot.iterrows():
            lines.append(f"| {method} | " + " | ".join(f"{v:.4g}" for v in row) + " |")
        out.append("\n".join(lines))
    n_trials = int(summary["n_trials"].max())
    return f"#### {figure} ({n_trials} trials; {source})\n\n" + "\n\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("figures", nargs="*", default=FIGURES)
    parser.add_argument("--reports", type=Path, default=ROOT / "data" / "08_reporting",
                        help="the reporting folder of the run (the text_features env writes its own)")
    args = parser.parse_args()
    for fig in args.figures:
        try:
            print(table(fig, args.reports.resolve()))
        except (FileNotFoundError, IndexError, KeyError) as exc:
            print(f"#### {fig}: no results ({exc})\n")


if __name__ == "__main__":
    main()
