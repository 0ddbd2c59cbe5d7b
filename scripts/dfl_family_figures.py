"""Draw the DFL benchmark's figures of a problem from saved summary tables, without a run.

The pipeline draws the same figures (`dfl_benchmark.<problem>.family_figure`, and a noise
level's `figure` with one line per method) at the end of a run; this script redraws them from
the ``summary.csv`` files runs left, for instance when a
reduced run was completed by later runs of some of its methods: the tables of one noise level
are merged in the order given, a later table replacing the rows of the methods it holds.
The methods' families come from the table's ``family`` column or, for tables saved before it
existed, from the benchmark's configured methods (conf/base/parameters_dfl_benchmark.yml).
Usage:
    python scripts/dfl_family_figures.py shortest_path --noise0 A.csv [B.csv ...] --noise05 C.csv [...] \
        --out figure.png [--per-method-prefix docs/figures/dfl_all_methods] \
        [--merged-prefix docs/figures/dfl_summaries/shortest_path]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from mom_pipeline.pipelines.dfl_benchmark.nodes import method_families, noise_level_title, report_families  # noqa: E402
from mom_pipeline.pipelines.dfl_benchmark.pipeline import PROBLEMS  # noqa: E402
from mom_pipeline.reporting.dfl import dfl_figure, with_families  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PARAMETERS = ROOT / "conf" / "base" / "parameters_dfl_benchmark.yml"


def merged(paths: list[Path]) -> pd.DataFrame:
    """The summary tables in order, each replacing the earlier tables' rows of its methods;
    methods keep the order of their first appearance."""
    if not paths:
        raise ValueError("no summary table given")
    table = pd.DataFrame()
    order: list[str] = []
    for path in paths:
        part = pd.read_csv(path)
        missing = {"method", "n_train", "degree", "normalized_regret_mean"} - set(part)
        if missing:
            raise ValueError(f"{path}: not a DFL summary table (no column {sorted(missing)})")
        order += [m for m in dict.fromkeys(part["method"]) if m not in order]
        table = pd.concat([table[~table["method"].isin(part["method"])] if len(table) else table, part])
    table["method"] = pd.Categorical(table["method"], order, ordered=True)
    return table.sort_values(["method", "n_train", "degree"]).astype({"method": str}).reset_index(drop=True)


def experiments(problem: str) -> dict[str, dict]:
    """The configured experiment of each noise level of `problem` (its smallest training size)."""
    cells = yaml.safe_load(PARAMETERS.read_text())["dfl_benchmark"]
    prefix = PROBLEMS[problem]
    return {noise: cells[f"{prefix}{noise}_n100"]["experiment"] for noise in ("noise0", "noise05")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("problem", choices=sorted(PROBLEMS))
    parser.add_argument("--noise0", nargs="+", type=Path, required=True)
    parser.add_argument("--noise05", nargs="+", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--per-method-prefix", type=Path,
                        help="also draw each noise level's figure with a line per method to <prefix>_<noise>.png")
    parser.add_argument("--merged-prefix", type=Path, help="also write the merged tables to <prefix>_<noise>.csv")
    args = parser.parse_args()
    specs = experiments(args.problem)
    tables = {}
    for noise, paths in (("noise0", args.noise0), ("noise05", args.noise05)):
        table = merged(paths)
        if "family" not in table or table["family"].isna().any():
            table = with_families(table, method_families(specs[noise]))
        tables[noise] = table
        if args.merged_prefix:
            table.to_csv(f"{args.merged_prefix}_{noise}.csv", index=False)
        if args.per_method_prefix:
            dfl_figure(table, noise_level_title(specs[noise])).savefig(f"{args.per_method_prefix}_{noise}.png", dpi=120)
    figure = report_families(tables["noise0"], tables["noise05"], specs["noise0"], specs["noise05"])
    figure.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
