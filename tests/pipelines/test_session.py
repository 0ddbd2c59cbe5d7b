"""Integration: KedroSession runs every registered pipeline on the smoke environment
(data generation -> bases -> training -> evaluation -> reporting), the run is tracked in
MLflow, the notebook redraws a figure from the catalog, and kedro-viz builds and renders in a
browser."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import math

import nbformat
import pandas as pd
import pytest
from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project
from nbclient import NotebookClient

from mom_pipeline.pipeline_registry import EXPERIMENTS, ONLINE_FIGURES, register_pipelines
from mom_pipeline.reporting import metric_name
from mom_pipeline.reporting.tables import ONLINE_TRACKED_COLUMNS, TRACKED_COLUMNS
from mom_pipeline.tracking import local_tracking_uri

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FIGURES = sorted({f for figs in EXPERIMENTS.values() for f in figs})


def _latest(folder: Path) -> Path:
    versions = sorted(p for p in folder.iterdir() if p.is_dir())
    assert versions, f"no version under {folder}"
    return versions[-1] / folder.name


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """The whole default pipeline once, on a copy of the project (smoke environment)."""
    root = tmp_path_factory.mktemp("project")
    shutil.copytree(PROJECT_ROOT / "conf", root / "conf", ignore=shutil.ignore_patterns("local"))
    (root / "conf" / "local").mkdir()
    shutil.copy(PROJECT_ROOT / "pyproject.toml", root / "pyproject.toml")
    (root / "src").mkdir()  # the package itself is installed; bootstrap only needs the folder
    os.environ["KEDRO_DISABLE_TELEMETRY"] = "true"
    bootstrap_project(root)
    with KedroSession.create(project_path=root, env="smoke") as session:
        session.run(pipeline_names=["__default__"])
    return root


def test_registered_pipelines():
    pipelines = register_pipelines()
    assert {"shortest_path", "knapsack", "online", "kernelized", "__default__"} <= set(pipelines)
    default_namespaces = {n.namespace.split(".")[0] for n in pipelines["__default__"].nodes}
    assert default_namespaces == set(FIGURES)
    # the whole paper in one run: every figure's nodes (those of __default__ but `formulations`)
    paper = {n.name for n in pipelines["paper"].nodes}
    assert paper == {n.name for n in pipelines["__default__"].nodes if n.namespace.split(".")[0] != "formulations"}
    assert {n.namespace.split(".")[0] for n in pipelines["paper"].nodes} == {f"fig{i}" for i in range(1, 8)}
    # readable node names: <figure>.<stage node>
    assert "fig1.plan_training" in {n.name for n in pipelines["shortest_path"].nodes}


def test_every_figure_has_its_outputs(smoke_run):
    for fig in FIGURES:
        report = smoke_run / "data" / "08_reporting" / fig
        for name in ("summary.csv", "summary.md", "figure.png", "figure.json"):
            assert _latest(report / name).stat().st_size > 0, (fig, name)
    evaluation = pd.read_parquet(_latest(smoke_run / "data" / "07_model_output" / "fig1" / "evaluation.parquet"))
    for column in ("experiment", "setting", "trial", "method", "sample", "regret", "relative_loss",
                   "optimal_value", "exact"):
        assert column in evaluation
    assert set(evaluation["method"]) == {"RF", "OLS", "Ridge", "SPO+", "MOM", "MOM-OGD"}
    # every test sample of every trial and method is there: nothing dropped
    assert len(evaluation) == 2 * 2 * 6 * 30
    assert (evaluation["regret"] >= -1e-9).all()
    hyper = pd.read_parquet(_latest(smoke_run / "data" / "07_model_output" / "fig1" / "hyperparameters.parquet"))
    assert set(hyper["method"]) == set(evaluation["method"])
    assert hyper.loc[hyper["method"] == "MOM", "params"].str.startswith("lam=").all()
    online = pd.read_parquet(_latest(smoke_run / "data" / "07_model_output" / "fig5" / "online_steps.parquet"))
    assert set(online["method"]) == {"Perceptron", "MOM-OGD", "MOM-FTRL", "Suboptimality-OGD"}
    assert online.groupby(["method", "trial"]).size().eq(60).all()
    reports = list((smoke_run / "data" / "08_reporting" / "run_reports").glob("*.md"))
    assert reports and "Package versions" in reports[0].read_text()


@pytest.mark.notebook
def test_notebook_redraws_a_figure(smoke_run):
    notebook = nbformat.read(PROJECT_ROOT / "notebooks" / "redraw_figure.ipynb", as_version=4)
    os.environ.update(MOM_PROJECT_PATH=str(smoke_run), MOM_ENV="smoke", MOM_FIGURE="fig1")
    (smoke_run / "logs").mkdir(exist_ok=True)  # conf/logging.yml's log file (the repository keeps the folder)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(smoke_run)}}).execute()
    assert (smoke_run / "data" / "08_reporting" / "fig1" / "notebook_redraw.png").stat().st_size > 0
    assert "%load_ext kedro.ipython" in notebook.cells[1].source
    outputs = json.dumps([cell.get("outputs", []) for cell in notebook.cells])
    assert outputs.count("Kedro project mom_pipeline") == 1  # loaded once, in MOM_ENV's environment
    assert "IProgress" not in outputs  # tqdm's warning without ipywidgets
    assert "Traceback" not in outputs
    draw = next(c for c in notebook.cells if "boxplot_figure" in c.source)
    assert any("image/png" in out.get("data", {}) for out in draw.outputs), "the figure is not shown inline"
    compare = notebook.cells[-1]
    assert "comparing run" in "".join(out.get("text", "") for out in compare.outputs)


def test_run_is_tracked_in_mlflow(smoke_run):
    """The run's MLflow metrics equal its summary.csv; run id, parameters and artifacts are there."""
    import mlflow
    from mlflow.tracking import MlflowClient

    assert mlflow.active_run() is None  # the run is closed with the session
    client = MlflowClient(tracking_uri=local_tracking_uri(smoke_run))
    experiment = client.get_experiment_by_name("mom_pipeline")
    (run,) = client.search_runs([experiment.experiment_id])
    version = run.data.tags["kedro_run_id"]
    assert run.data.tags["git_dirty"] in ("true", "false") and run.data.tags["git_commit"]
    assert run.data.params["fig1.experiment.trials"] == "2"
    for fig in FIGURES:
        summary = pd.read_csv(smoke_run / "data" / "08_reporting" / fig / "summary.csv" / version / "summary.csv")
        tracked = {k: v for k, v in run.data.metrics.items() if k.startswith(f"{fig}.")}
        if fig in ONLINE_FIGURES:
            expected = {metric_name(fig, r["method"], c): r[c] for _, r in summary.iterrows() for c in ONLINE_TRACKED_COLUMNS}
        else:
            expected = {metric_name(fig, r["method"], f"{r['setting']}_{r['setting_value']:g}", c): r[c]
                        for _, r in summary.iterrows() for c in TRACKED_COLUMNS}
        expected = {k: v for k, v in expected.items() if math.isfinite(v)}
        assert expected and set(tracked) == set(expected), fig
        for key, value in expected.items():
            assert tracked[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
        artifacts = {a.path for a in client.list_artifacts(run.info.run_id, fig)}
        assert {f"{fig}/{n}" for n in ("summary.csv", "summary.md", "figure.png", "figure.json")} <= artifacts
    assert f"{version}.md" in {a.path for a in client.list_artifacts(run.info.run_id)}  # the run report


@pytest.fixture(scope="module")
def viz_build(smoke_run):
    """`kedro viz build --include-previews` after the smoke run: its console output."""
    kedro = Path(sys.executable).parent / "kedro"
    (smoke_run / "logs").mkdir(exist_ok=True)  # conf/logging.yml's log file
    result = subprocess.run([str(kedro), "viz", "build", "--include-previews"], cwd=smoke_run, capture_output=True,
                            text=True, timeout=600, env={**os.environ, "KEDRO_DISABLE_TELEMETRY": "true"})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return result.stdout + result.stderr


def test_kedro_viz_build_is_quiet(smoke_run, viz_build):
    """A successful build says so; the many datasets no smoke run writes (the inverse and benchmark
    pipelines') get one line together, not a warning with its error each."""
    assert "Deprecat" not in viz_build
    # a cycle among the catalog's layers (e.g. a reporting table feeding a model) turns the layer view off
    assert "circular dependency" not in viz_build
    assert "could not be previewed" not in viz_build and "Traceback" not in viz_build
    assert viz_build.count("no preview for datasets that no run has written yet") == 1
    assert "Success!" in viz_build and (smoke_run / "build" / "index.html").exists()
    # the logging config, that one line, kedro-viz's note on run events, success (and the spinner's lines)
    assert len([line for line in viz_build.splitlines() if line and not line.startswith("...Creating")]) <= 4


@pytest.mark.browser
def test_kedro_viz_renders_in_a_browser(smoke_run, viz_build):
    """The build, served over HTTP, in headless Chromium: the shortest-path nodes are drawn and a
    plotly preview renders."""
    from viz_browser import open_viz

    with open_viz(smoke_run / "build", "?pid=shortest_path&expandAllPipelines=true") as page:
        names = {t.strip() for t in page.locator("g.pipeline-node").all_text_contents()}
        for fig in EXPERIMENTS["shortest_path"]:
            assert {f"{fig}.figure_plotly", f"{fig}.summary_table", f"{fig}.metrics"} <= names
        assert {"plan_training", "evaluate_models", "report_experiment", "track_metrics"} <= names
        assert not {n for n in names if n.startswith(("fig3", "fig5"))}  # only the shortest-path figures
        page.locator("g.pipeline-node", has_text="fig1.figure_plotly").dispatch_event("click")
        plot = page.locator(".js-plotly-plot").first
        plot.wait_for(timeout=60_000)
        assert plot.locator("g.trace.boxes").count() >= 6
        # the table preview holds the whole summary (a header and one row per method and setting) ...
        summary = pd.read_csv(_latest(smoke_run / "data" / "08_reporting" / "fig1" / "summary.csv"))
        page.locator("g.pipeline-node", has_text="fig1.summary_table").dispatch_event("click")
        rows = page.locator("table tr")
        rows.nth(len(summary)).wait_for(timeout=60_000)
        assert rows.count() == len(summary) + 1
        # ... and the markdown summary previews too
        page.locator("g.pipeline-node", has_text="fig1.summary_markdown").dispatch_event("click")
        page.get_by_text("median rel. loss").first.wait_for(timeout=60_000)


def test_session_params_override(project_copy, monkeypatch):
    """A session's runtime parameters reach its nodes, and its namespace selection holds: figure
    2's data stage, run alone (what the assertions read), untracked (the module's tracked run is
    smoke_run's)."""
    from mom_pipeline.tracking import TRACKING_SWITCH

    monkeypatch.setenv(TRACKING_SWITCH, "off")
    bootstrap_project(project_copy)
    with KedroSession.create(project_path=project_copy, env="smoke",
                             runtime_params={"fig2": {"experiment": {"trials": 3}}}) as session:
        session.run(pipeline_names=["shortest_path"], namespaces=["fig2"], to_nodes=["fig2.summarize_data"])
    table = pd.read_parquet(_latest(project_copy / "data" / "03_primary" / "fig2" / "data_summary.parquet"))
    assert sorted(table["trial"]) == [0, 1, 2]
    assert not (project_copy / "data" / "03_primary" / "fig1").exists()
