"""End-to-end wall time, peak memory and disk footprint of each paper experiment.

Runs `kedro run --namespaces=<figure>` in a subprocess for each figure and samples the
resident memory of the whole process tree (kedro plus its worker processes) every 0.2 s.
After each figure it measures the figure's folders under data/ (every layer), and at the
end the whole of data/, against the 2 GB budget of a full paper run (docs/runs_and_storage.md).
Usage: python benchmarks/experiments.py [--env local] [--figures fig1,fig5] [--params "..."]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

from mom_pipeline.data_cleanup import figure_sizes, size_of

ROOT = Path(__file__).resolve().parents[1]
BUDGET_GB = 2.0
PIPELINE_OF = {"fig1": "shortest_path", "fig2": "shortest_path", "fig7": "shortest_path", "fig3": "knapsack",
               "fig4": "knapsack", "fig6": "knapsack", "fig5": "online", "formulations": "formulations"}


def run_figure(figure: str, env: str, params: str | None, started: float) -> tuple[float, float, int]:
    """(wall seconds, peak resident memory of the process tree in GB, return code)."""
    kedro = str(Path(sys.executable).parent / "kedro")
    command = [kedro, "run", f"--pipelines={PIPELINE_OF[figure]}", f"--namespaces={figure}", f"--env={env}"]
    # train every trial: finished trials of an earlier run would otherwise be reused, not timed;
    # methods trained by an earlier figure of this benchmark on the same data are reused, as in
    # a user's full run (figure 6 takes figure 4's MOM variants on their shared trials)
    command += ["--params", ",".join(p for p in ("storage.resume=false", f"storage.trained_since={started:.0f}",
                                                  params) if p)]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "KEDRO_DISABLE_TELEMETRY": "true", "MOM_PROGRESS": "0"})
    root = psutil.Process(process.pid)
    peak = 0
    while process.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.2)
    _, stderr = process.communicate()
    seconds = time.perf_counter() - started
    if process.returncode:
        print(stderr[-3000:], file=sys.stderr)
    return seconds, peak / 1e9, process.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--env", default="local", help="configuration environment (local = the paper's settings)")
    parser.add_argument("--figures", default=",".join(PIPELINE_OF), help="comma-separated figures")
    parser.add_argument("--params", default=None, help="extra --params for kedro run")
    args = parser.parse_args()
    print(f"{'figure':8s} {'wall s':>9s} {'peak GB':>8s} {'disk MB':>8s}  status")
    total = 0.0
    started = time.time() - 1.0  # whole seconds on the command line: never after the start
    for figure in args.figures.split(","):
        seconds, peak, code = run_figure(figure, args.env, args.params, started)
        total += seconds
        disk = figure_sizes(ROOT / "data").get(figure, 0) / 1e6
        print(f"{figure:8s} {seconds:9.1f} {peak:8.2f} {disk:8.1f}  {'ok' if code == 0 else f'FAILED ({code})'}",
              flush=True)
    data_gb = size_of(ROOT / "data") / 1e9
    print(f"{'total':8s} {total:9.1f} {'':8s} {data_gb * 1e3:8.1f}")
    print(f"data/ holds {data_gb:.2f} GB: {'within' if data_gb <= BUDGET_GB else 'OVER'} the {BUDGET_GB:.0f} GB budget "
          "(every version kept; make clean-data KEEP=1 keeps the newest only)")


if __name__ == "__main__":
    main()
