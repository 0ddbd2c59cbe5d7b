"""Project hooks: a log line with the time of every stage, and a run report per run."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import logging
import platform
import time
from pathlib import Path

import yaml
from kedro.framework.hooks import hook_impl

log = logging.getLogger(__name__)

PACKAGES = ("kedro", "kedro-datasets", "kedro-viz", "numpy", "scipy", "pandas", "cvxpy", "clarabel", "highspy",
            "scikit-learn", "matplotlib", "plotly")


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def _plain(value):
    """Parameters as YAML can write them (Kedro hands typed specs over as Pydantic models)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class RunReportHooks:
    """Times every node (logged as it finishes) and writes
    data/08_reporting/run_reports/<timestamp>.md: parameters, package versions, timings."""

    def __init__(self):
        self._started: dict[str, float] = {}
        self._timings: list[tuple[str, float]] = []
        self._run_started = 0.0
        self._run_params: dict = {}

    @hook_impl
    def before_pipeline_run(self, run_params, pipeline, catalog):
        self._run_started = time.perf_counter()
        self._timings = []
        self._run_params = dict(run_params)

    @hook_impl
    def before_node_run(self, node):
        self._started[node.name] = time.perf_counter()

    @hook_impl
    def after_node_run(self, node):
        seconds = time.perf_counter() - self._started.pop(node.name, time.perf_counter())
        self._timings.append((node.name, seconds))
        log.info("stage %s took %.2f s", node.name, seconds)

    @hook_impl
    def after_pipeline_run(self, run_params, pipeline, catalog):
        project = Path(run_params.get("project_path") or ".")
        figures = sorted({name.split(".")[0] for name, _ in self._timings if "." in name})
        try:
            parameters = catalog.load("parameters")
        except Exception:  # noqa: BLE001 - the report is best effort, never fails a run
            parameters = {}
        used = {fig: _plain(parameters[fig]) for fig in figures if fig in parameters}
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H.%M.%SZ")
        total = time.perf_counter() - self._run_started
        lines = [f"# Run report {stamp}", "",
                 f"- command: pipelines={run_params.get('pipeline_names') or run_params.get('pipeline_name')}, "
                 f"namespaces={run_params.get('namespaces')}, env={run_params.get('env')}, "
                 f"runtime params={run_params.get('runtime_params') or run_params.get('extra_params')}",
                 f"- total wall time: {total:.1f} s", "", "## Stage timings", "", "| node | seconds |", "|---|---|"]
        lines += [f"| {name} | {seconds:.2f} |" for name, seconds in self._timings]
        lines += ["", "## Package versions", "", "| package | version |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in package_versions().items()]
        lines += ["", "## Parameters", "", "```yaml", yaml.safe_dump(used, sort_keys=False).rstrip(), "```", ""]
        out = project / "data" / "08_reporting" / "run_reports" / f"{stamp}.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(lines))
        log.info("run report written to %s (total %.1f s)", out, total)
