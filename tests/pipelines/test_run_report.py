"""The run report: run id, git commit, stage time until the node's last output is saved, and
a report for failed runs."""

import re
from pathlib import Path
from types import SimpleNamespace

from kedro.io import DataCatalog

from mom_pipeline.hooks import RunReportHooks, git_state

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def test_stage_ends_when_its_last_output_is_saved_and_failed_runs_are_reported(tmp_path):
    hooks = RunReportHooks()
    hooks.before_pipeline_run(run_params={}, pipeline=None, catalog=None)
    train = SimpleNamespace(name="fig1.plan_training", outputs=["fig1.models"])
    hooks.before_node_run(train)
    hooks.after_node_run(train)
    assert hooks._timings == []  # the lazy partitions are trained while `models` is saved
    hooks.after_dataset_saved("fig1.models", None, train)
    assert [name for name, _ in hooks._timings] == ["fig1.plan_training"]
    evaluate = SimpleNamespace(name="fig1.evaluate_models", outputs=["fig1.evaluation", "fig1.hyperparameters"])
    hooks.before_node_run(evaluate)
    hooks.after_dataset_saved("fig1.evaluation", None, evaluate)
    run_id = "2026-01-01T00.00.00.000Z"
    hooks.on_pipeline_error(error=RuntimeError("solver diverged"), pipeline=None, catalog=DataCatalog(),
                            run_params={"project_path": str(tmp_path), "run_id": run_id, "env": "smoke",
                                        "pipeline_names": ["online"],
                                        "runtime_params": {"fig5": {"experiment": {"trials": 2}}}})
    report = (tmp_path / "data" / "08_reporting" / "run_reports" / f"{run_id}.md").read_text()
    # the command as the MLflow run's kedro_command tag gives it (here a session: the kedro run
    # that does the same), not a dump of Kedro's run parameters
    assert "- command: `kedro run --env=smoke --pipelines=online --params=fig5.experiment.trials=2`" in report
    assert "- status: FAILED: RuntimeError: solver diverged" in report
    assert f"- run id (save version of every versioned dataset): {run_id}" in report
    assert "| fig1.plan_training |" in report and "| fig1.evaluate_models | unfinished |" in report


def test_git_state():
    commit, dirty = git_state(PROJECT_ROOT)
    if (PROJECT_ROOT / ".git").exists():
        assert re.fullmatch(r"[0-9a-f]{40}", commit) and isinstance(dirty, bool)
    assert git_state(PROJECT_ROOT.anchor) == ("unknown", False) or Path(PROJECT_ROOT.anchor, ".git").exists()


def test_a_report_that_cannot_be_written_leaves_the_runs_own_error(tmp_path, caplog):
    """Issue 51 item 11: with a read-only data folder the run ended in the hook's own OSError."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "08_reporting").write_text("")  # a file where the folder goes: mkdir fails
    hooks = RunReportHooks()
    hooks.before_pipeline_run(run_params={}, pipeline=None, catalog=None)
    run_params = {"project_path": str(tmp_path), "run_id": "2026-01-01T00.00.00.000Z"}
    with caplog.at_level("WARNING"):
        hooks.on_pipeline_error(error=PermissionError("data/03_primary is read-only"), pipeline=None,
                                catalog=DataCatalog(), run_params=run_params)  # returns: Kedro re-raises the error
    assert "run report not written" in caplog.text and "FAILED" in caplog.text
    hooks.before_pipeline_run(run_params={}, pipeline=None, catalog=None)
    hooks.after_pipeline_run(run_params=run_params, pipeline=None, catalog=DataCatalog())  # a run that succeeded
    assert caplog.text.count("run report not written") == 2
