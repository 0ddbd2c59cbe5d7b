"""Start-up of a run: seconds from starting Python to the first node, with the project's MLflow
tracking and without it, measured in one invocation on a copy of the project: the smoke
environment's `online` pipeline up to its first node, alternating the two variants. Issue 53's
target: tracked <= 1.5x bare.

The bare session leaves out the project's TrackingHooks and keeps Kedro from loading kedro-mlflow's
own hook (a placeholder holds the plugin's entry-point name), so nothing imports MLflow: it is the
same project without tracking. Each session says whether MLflow was imported by its first node.

Run:  .venv/bin/python benchmarks/startup.py [--repeats 3]
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

# One session in a fresh interpreter; prints the wall-clock time at which the first node starts.
SESSION = """
import sys, time
from pathlib import Path
from kedro.framework.hooks import hook_impl
from kedro.framework.project import settings
from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project

class FirstNode:
    @hook_impl
    def before_node_run(self, node):
        print("FIRST_NODE", time.time(), "mlflow" in sys.modules, flush=True)


class PluginHookLeftOut:  # registered under the plugin's entry-point name: Kedro does not load it
    def __init__(self, name):
        self.__name__ = name

project, tracked = Path(sys.argv[1]), sys.argv[2] == "tracked"
bootstrap_project(project)
from mom_pipeline.tracking import PLUGIN_ENTRY_POINT, TrackingHooks
hooks = tuple(settings.HOOKS) if tracked else (
    *(h for h in settings.HOOKS if not isinstance(h, TrackingHooks)), PluginHookLeftOut(PLUGIN_ENTRY_POINT))
settings.set("HOOKS", hooks + (FirstNode(),))
with KedroSession.create(project_path=project, env="smoke") as session:
    session.run(pipeline_names=["online"], to_nodes=["fig5.generate_data"])
"""


def project_copy(folder: Path) -> Path:
    shutil.copytree(ROOT / "conf", folder / "conf", ignore=shutil.ignore_patterns("local"))
    for name in ("conf/local", "data", "logs", "src"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "pyproject.toml", folder / "pyproject.toml")
    return folder


def seconds_to_first_node(project: Path, variant: str) -> tuple[float, bool]:
    """Seconds to the first node, and whether MLflow was imported by then."""
    env = dict(os.environ, KEDRO_DISABLE_TELEMETRY="true", MPLBACKEND="Agg", MOM_PROGRESS="0")
    env.pop("MLFLOW_TRACKING_URI", None)
    started = time.time()
    result = subprocess.run([sys.executable, "-c", SESSION, str(project), variant], cwd=project, env=env,
                            capture_output=True, text=True, check=True)
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("FIRST_NODE")]
    _, at, mlflow_imported = line.split()
    return float(at) - started, mlflow_imported == "True"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = project_copy(Path(tmp) / "project")
        fresh, _ = seconds_to_first_node(project, "tracked")  # creates the MLflow store
        times = {"tracked": [], "bare": []}
        imported = {"tracked": set(), "bare": set()}
        for _ in range(args.repeats):
            for variant in times:
                seconds, mlflow_imported = seconds_to_first_node(project, variant)
                times[variant].append(seconds)
                imported[variant].add(mlflow_imported)
    tracked, bare = (statistics.median(times[v]) for v in ("tracked", "bare"))
    bare_mlflow = "imports MLflow" if True in imported["bare"] else "MLflow never imported"
    print(f"seconds to the first node (median of {args.repeats}): tracked {tracked:.1f}; bare {bare:.1f} "
          f"({bare_mlflow})")
    print(f"tracked / bare = {tracked / bare:.2f} (target <= 1.5); a new MLflow store adds {fresh - tracked:.1f} s "
          f"once (first tracked run {fresh:.1f} s)")
    print("all:", {v: [round(t, 1) for t in ts] for v, ts in times.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
