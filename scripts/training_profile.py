"""Where a full run's training time goes: CPU minutes per method and figure.

Reads the latest `data/07_model_output/<fig>/hyperparameters.parquet` of each figure (one row
per setting, trial and method, with the tuning and refit seconds measured inside the worker)
and prints two markdown tables: rows are methods, columns figures, cells the summed CPU minutes
of training (the tuning, whose time includes the final refit on all training samples, or the
one fit of a method without a grid), then of the final refits alone (methods reused from
another run or figure, trained on the same data before, count there and not here). Until
2026-11-28 the first table added the refit twice (tuning plus refit): figure 4's kernel MOMs
by 13 of 64 minutes. This is the profile of a full run at the granularity that
matters for choosing what to speed up; `benchmarks/experiments.py` gives the wall times.
Usage: python scripts/training_profile.py [fig1 fig2 ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ["fig1", "fig2", "fig3", "fig4", "fig6", "fig7"]


def latest_table(figure: str) -> pd.DataFrame | None:
    """The latest hyperparameters table of a figure, or None when it was never run."""
    folder = ROOT / "data" / "07_model_output" / figure / "hyperparameters.parquet"
    if not folder.is_dir():
        return None
    versions = sorted(p for p in folder.iterdir() if p.is_dir())
    return pd.read_parquet(versions[-1] / folder.name) if versions else None


def profile(figures: list[str], refit_only: bool = False) -> pd.DataFrame:
    """CPU minutes of training (or of the final refits alone) per method (rows) and figure
    (columns), with totals."""
    columns = {}
    for figure in figures:
        table = latest_table(figure)
        if table is None:
            print(f"{figure}: no hyperparameters table yet (run the figure first)", file=sys.stderr)
            continue
        if "reused" in table:  # methods found already trained: their seconds belong to another run
            table = table[~table["reused"]]
        tuned = table["tuning_seconds"] > 0  # its fit_seconds is the refit, inside tuning_seconds
        if refit_only:
            seconds = table["fit_seconds"].where(tuned, 0.0)
        else:
            seconds = table["tuning_seconds"].where(tuned, table["fit_seconds"])
        columns[figure] = seconds.groupby(table["method"]).sum() / 60
    out = pd.DataFrame(columns).fillna(0.0)
    out["all"] = out.sum(axis=1)
    out.loc["all methods"] = out.sum(axis=0)
    return out.sort_values("all", ascending=False)


def print_table(out: pd.DataFrame) -> None:
    print("| method | " + " | ".join(out.columns) + " |")
    print("|---|" + "---|" * len(out.columns))
    for method, row in out.iterrows():
        print(f"| {method} | " + " | ".join(f"{v:.2f}" for v in row) + " |")


def main() -> None:
    figures = sys.argv[1:] or FIGURES
    print("Training CPU minutes (tuning with its refit, or the one fit):")
    print_table(profile(figures))
    print("\nOf which the final refits on all training samples:")
    print_table(profile(figures, refit_only=True))


if __name__ == "__main__":
    main()
