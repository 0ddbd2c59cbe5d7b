"""Are the smoke run's results unchanged between two revisions? Bit for bit.

Checks out each revision into a temporary git worktree, runs `kedro run --env=smoke` there
(every figure and pipeline, shrunk to seconds) with this venv's Python and the revision's own
source, and compares every evaluation table, trial summary and hyperparameter table exactly,
leaving out the columns that hold wall-clock times. Exits 1 when anything differs.

Run:  make compare-smoke BASE=<rev> [HEAD_REV=<rev>]
  or  .venv/bin/python scripts/compare_smoke.py --base <rev> [--head HEAD]   (docs/guide.md)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
TABLES = ("evaluation.parquet", "trial_summary.parquet", "hyperparameters.parquet", "online_steps.parquet")


def run_smoke(revision: str, folder: Path) -> dict[str, pd.DataFrame]:
    """The smoke run's tables of `revision`, by dataset path (timing columns dropped)."""
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(folder), revision],
                   check=True, capture_output=True)
    try:
        env = dict(os.environ, PYTHONPATH=str(folder / "src"), KEDRO_DISABLE_TELEMETRY="true", MPLBACKEND="Agg",
                   MOM_PROGRESS="0")
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kedro", "run", "--env=smoke"], cwd=folder, env=env, check=True,
                       capture_output=True)
        print(f"{revision}: smoke run in {time.perf_counter() - started:.0f} s")
        tables = {}
        for name in TABLES:
            for path in sorted((folder / "data").glob(f"**/{name}/*/{name}")):
                frame = pd.read_parquet(path)
                key = str(path.parent.parent.relative_to(folder / "data"))
                tables[key] = frame[[c for c in frame.columns if "seconds" not in c]]
        return tables
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(folder)], check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--head", default="HEAD")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = run_smoke(args.base, Path(tmp) / "base")
        head = run_smoke(args.head, Path(tmp) / "head")
    differ = sorted(set(base) ^ set(head))
    for key in sorted(set(base) & set(head)):
        try:
            pd.testing.assert_frame_equal(base[key], head[key], check_exact=True)
        except AssertionError as error:
            differ.append(key)
            print(f"{key} differs: {str(error).splitlines()[0]}")
    rows = sum(len(frame) for frame in head.values())
    print(f"{len(head)} tables, {rows} rows compared exactly: " + ("identical" if not differ else f"{len(differ)} differ"))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
