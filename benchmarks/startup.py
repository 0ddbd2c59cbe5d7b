"""Start-up of a `kedro run`: seconds from starting the `kedro` command to the first node, with the
project's MLflow tracking and without it, measured in one invocation on a copy of the project
(the smoke environment's `online` pipeline up to its first node), the two variants interleaved.
Issue 53's target: tracked <= 1.5x bare.

Both variants run Kedro's command line (`kedro run ...`, its plugin commands and hooks loaded as
Kedro loads them). The bare one is the same project without kedro-mlflow: the plugin's commands
and hook are left out, and the project's TrackingHooks too, so nothing imports MLflow (checked).
Each run says whether MLflow was imported by its first node; the whole run's wall time (the
tracked one waits at its end until its tracking process has recorded the run) is printed too, and
the tracked runs are checked in the store: FINISHED, with their parameters.

Run:  .venv/bin/python benchmarks/startup.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND = ["run", "--env=smoke", "--pipelines=online", "--to-nodes=fig5.generate_data"]

# `kedro <args>` in a fresh interpreter, with a hook that prints the wall-clock time at which the
# first node starts; "bare" leaves kedro-mlflow and the project's tracking out.
KEDRO = """
import sys, time
import kedro.framework.session.session as session_module
from kedro.framework.hooks import hook_impl

variant = sys.argv.pop(1)


class FirstNode:
    started = False

    @hook_impl
    def before_node_run(self, node):
        if not FirstNode.started:
            FirstNode.started = True
            print("FIRST_NODE", time.time(), "mlflow" in sys.modules, flush=True)


class PluginHookLeftOut:  # holds the plugin hook's entry-point name: Kedro does not load it
    def __init__(self, name):
        self.__name__ = name


register = session_module._register_hooks


def register_hooks(manager, hooks):
    from mom_pipeline.tracking import PLUGIN_ENTRY_POINT, TrackingHooks

    if variant == "bare":
        hooks = (*(h for h in hooks if not isinstance(h, TrackingHooks)), PluginHookLeftOut(PLUGIN_ENTRY_POINT))
    register(manager, (*hooks, FirstNode()))


session_module._register_hooks = register_hooks
if variant == "bare":
    import kedro.framework.cli.utils as cli_utils

    entry_points = cli_utils._get_entry_points
    cli_utils._get_entry_points = lambda name: [e for e in entry_points(name) if not e.module.startswith("kedro_mlflow")]
sys.argv = ["kedro", *sys.argv[1:]]
from kedro.framework.cli import main

main()
"""


def project_copy(folder: Path) -> Path:
    shutil.copytree(ROOT / "conf", folder / "conf", ignore=shutil.ignore_patterns("local"))
    for name in ("conf/local", "data", "logs", "src"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "pyproject.toml", folder / "pyproject.toml")
    return folder


def kedro_run(project: Path, variant: str) -> tuple[float, float, bool]:
    """Seconds to the first node, seconds of the whole command, and whether MLflow was imported
    by the first node."""
    env = dict(os.environ, KEDRO_DISABLE_TELEMETRY="true", MPLBACKEND="Agg", MOM_PROGRESS="0",
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    env.pop("MLFLOW_TRACKING_URI", None)
    started = time.time()
    result = subprocess.run([sys.executable, "-c", KEDRO, variant, *COMMAND], cwd=project, env=env,
                            capture_output=True, text=True)
    ended = time.time()
    if result.returncode != 0:
        raise RuntimeError(f"{variant} run failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("FIRST_NODE")]
    _, at, mlflow_imported = line.split()
    return float(at) - started, ended - started, mlflow_imported == "True"


def tracked_runs(project: Path) -> list[tuple[str, int]]:
    """(status, number of parameters) of every run in the project's store."""
    from mlflow.tracking import MlflowClient

    sys.path.insert(0, str(ROOT / "src"))
    from mom_pipeline.tracking import local_tracking_uri

    client = MlflowClient(tracking_uri=local_tracking_uri(project))
    experiments = [e.experiment_id for e in client.search_experiments()]
    return [(run.info.status, len(run.data.params)) for run in client.search_runs(experiments)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        project = project_copy(Path(tmp) / "project")
        fresh, _, _ = kedro_run(project, "tracked")  # creates the MLflow store
        first = {"tracked": [], "bare": []}
        total = {"tracked": [], "bare": []}
        imported = {"tracked": set(), "bare": set()}
        for repeat in range(args.repeats):
            order = ("tracked", "bare") if repeat % 2 == 0 else ("bare", "tracked")
            for variant in order:
                seconds, whole, mlflow_imported = kedro_run(project, variant)
                first[variant].append(seconds)
                total[variant].append(whole)
                imported[variant].add(mlflow_imported)
        runs = tracked_runs(project)
    if True in imported["bare"]:
        raise RuntimeError("the bare run imported MLflow: it is no reference without tracking")
    tracked, bare = (statistics.median(first[v]) for v in ("tracked", "bare"))
    tracked_total, bare_total = (statistics.median(total[v]) for v in ("tracked", "bare"))
    statuses = sorted({status for status, _ in runs})
    print(f"load average (1, 5, 15 min) before {load_before[0]:.1f} {load_before[1]:.1f} {load_before[2]:.1f}, "
          f"after {' '.join(f'{x:.1f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    print(f"`kedro {' '.join(COMMAND)}`, median of {args.repeats}, interleaved:")
    print(f"  to the first node: tracked {tracked:.1f} s, bare {bare:.1f} s -> tracked / bare = {tracked / bare:.2f} "
          f"(target <= 1.5); MLflow imported by the first node: "
          f"{'yes' if True in imported['tracked'] else 'no'} (tracked), no (bare)")
    print(f"  whole command: tracked {tracked_total:.1f} s, bare {bare_total:.1f} s -> "
          f"{tracked_total / bare_total:.2f}")
    print(f"  the first tracked run (a new MLflow store) reached its first node after {fresh:.1f} s")
    print(f"  tracked runs in the store: {len(runs)} ({', '.join(statuses)}), "
          f"{min(n for _, n in runs)}-{max(n for _, n in runs)} parameters each")
    print("all:", {v: [round(t, 1) for t in ts] for v, ts in first.items()},
          "whole:", {v: [round(t, 1) for t in ts] for v, ts in total.items()})
    return 0 if len(runs) == args.repeats + 1 and statuses == ["FINISHED"] else 1


if __name__ == "__main__":
    sys.exit(main())
