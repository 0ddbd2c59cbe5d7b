"""Start-up of a run: seconds from starting Python to the first node, with the project's MLflow
tracking and without it (the project's TrackingHooks, which is kedro-mlflow's hook, left out),
measured in one invocation on a copy of the project: the smoke environment's `online` pipeline
up to its first node, alternating the two variants. Issue 53's target: tracked <= 1.5x bare.

settings.py imports the plugin (TrackingHooks subclasses its hook), so the session without the
hook still pays for importing kedro-mlflow and MLflow; that import is timed on its own (a fresh
interpreter importing the project's tracking module against one importing Kedro alone) and
taken off for the bare figure.

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
        print("FIRST_NODE", time.time(), flush=True)

project, tracked = Path(sys.argv[1]), sys.argv[2] == "tracked"
bootstrap_project(project)
from mom_pipeline.tracking import TrackingHooks
hooks = tuple(settings.HOOKS) if tracked else tuple(h for h in settings.HOOKS if not isinstance(h, TrackingHooks))
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


def seconds_to_first_node(project: Path, variant: str) -> float:
    env = dict(os.environ, KEDRO_DISABLE_TELEMETRY="true", MPLBACKEND="Agg", MOM_PROGRESS="0")
    env.pop("MLFLOW_TRACKING_URI", None)
    started = time.time()
    result = subprocess.run([sys.executable, "-c", SESSION, str(project), variant], cwd=project, env=env,
                            capture_output=True, text=True, check=True)
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("FIRST_NODE")]
    return float(line.split()[1]) - started


def import_seconds(statement: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = project_copy(Path(tmp) / "project")
        fresh = seconds_to_first_node(project, "tracked")  # creates the MLflow store
        times = {"tracked": [], "bare": []}
        imports = []
        for _ in range(args.repeats):
            for variant in times:
                times[variant].append(seconds_to_first_node(project, variant))
            imports.append(import_seconds("import kedro.framework.session, mom_pipeline.tracking")
                           - import_seconds("import kedro.framework.session"))
    tracked, hooked_off, plugin_import = (statistics.median(v) for v in (times["tracked"], times["bare"], imports))
    bare = hooked_off - plugin_import
    print(f"seconds to the first node (median of {args.repeats}): tracked {tracked:.1f}; without the tracking hook "
          f"{hooked_off:.1f}, of which {plugin_import:.1f} importing kedro-mlflow and MLflow; bare {bare:.1f}")
    print(f"tracked / bare = {tracked / bare:.2f} (target <= 1.5); a new MLflow store adds {fresh - tracked:.1f} s "
          f"once (first tracked run {fresh:.1f} s)")
    print("all:", {v: [round(t, 1) for t in ts] for v, ts in times.items()}, "imports:", [round(t, 1) for t in imports])
    return 0


if __name__ == "__main__":
    sys.exit(main())
