"""End-to-end wall time, peak memory and disk footprint of the paper experiments.

With --pipeline (`make bench-experiments`: --pipeline paper, every figure), one `kedro run
--pipelines=<name>` in a subprocess: the whole paper as a user runs it with one command. Its
figures' times are the sums of their stages from the run's report (one start-up of Kedro and
MLflow and one pool of workers for all of them). With --figures, one `kedro run
--namespaces=<figure>` per figure, each with its own start-up (about 9 s). Either way it samples
the resident memory of the whole process tree (kedro plus its worker processes) every 0.2 s,
measures each figure's folders under data/ (every layer), and at the end the whole of data/,
against the 2 GB budget of a full paper run (docs/runs_and_storage.md).
Usage: python benchmarks/experiments.py [--env local] [--pipeline paper | --figures fig1,fig5] [--params "..."]
"""

from __future__ import annotations

import argparse
import os
import re
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
    """(wall seconds, peak resident memory of the process tree in GB, return code) of one figure."""
    return run_kedro([f"--pipelines={PIPELINE_OF[figure]}", f"--namespaces={figure}"], env, params, started)


def run_kedro(selection: list[str], env: str, params: str | None, started: float) -> tuple[float, float, int]:
    """(wall seconds, peak resident memory of the process tree in GB, return code) of one `kedro run`."""
    kedro = str(Path(sys.executable).parent / "kedro")
    command = [kedro, "run", *selection, f"--env={env}"]
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


def stage_seconds(report: Path) -> dict[str, float]:
    """Seconds per figure of a run report: the sum of its stages' times (`hooks.RunReportHooks`)."""
    seconds: dict[str, float] = {}
    for match in re.finditer(r"^\| ([\w-]+)\.[\w.]+ \| ([0-9.]+) \|$", report.read_text(), flags=re.MULTILINE):
        seconds[match[1]] = seconds.get(match[1], 0.0) + float(match[2])
    return seconds


def run_pipeline(name: str, env: str, params: str | None, started: float) -> None:
    """One `kedro run --pipelines=<name>`: its wall time and peak memory, and each figure's stages."""
    reports = ROOT / "data" / "08_reporting" / "run_reports"
    before = set(reports.glob("*.md")) if reports.is_dir() else set()
    seconds, peak, code = run_kedro([f"--pipelines={name}"], env, params, started)
    new = sorted(set(reports.glob("*.md")) - before)
    per_figure = stage_seconds(new[-1]) if new else {}
    sizes = figure_sizes(ROOT / "data")
    print(f"{'figure':8s} {'stages s':>9s} {'disk MB':>8s}")
    for figure, figure_seconds in per_figure.items():
        print(f"{figure:8s} {figure_seconds:9.1f} {sizes.get(figure, 0) / 1e6:8.1f}")
    print(f"{'stages':8s} {sum(per_figure.values()):9.1f}")
    data_gb = size_of(ROOT / "data") / 1e9
    status = "ok" if code == 0 else f"FAILED ({code})"
    print(f"kedro run --pipelines={name}: {seconds:.1f} s wall = {seconds / 60:.1f} min, peak {peak:.2f} GB, {status}")
    print(f"data/ holds {data_gb:.2f} GB: {'within' if data_gb <= BUDGET_GB else 'OVER'} the {BUDGET_GB:.0f} GB budget "
          "(every version kept; make clean-data KEEP=1 keeps the newest only)")
    if code:
        sys.exit(code)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--env", default="local", help="configuration environment (local = the paper's settings)")
    parser.add_argument("--pipeline", default=None, help="one kedro run of this pipeline (paper: every figure)")
    parser.add_argument("--figures", default=",".join(PIPELINE_OF), help="comma-separated figures, one run each")
    parser.add_argument("--params", default=None, help="extra --params for kedro run")
    args = parser.parse_args()
    started = time.time() - 1.0  # whole seconds on the command line: never after the start
    if args.pipeline:
        run_pipeline(args.pipeline, args.env, args.params, started)
        return
    print(f"{'figure':8s} {'wall s':>9s} {'peak GB':>8s} {'disk MB':>8s}  status")
    total = 0.0
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
