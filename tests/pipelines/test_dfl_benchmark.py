"""The DFL benchmark pipeline end to end on the smoke environment, through the kedro CLI."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from mom_pipeline.metrics import normalized_regret
from mom_pipeline.pipeline_registry import register_pipelines

KEDRO = str(Path(sys.executable).parent / "kedro")
METHODS = ["LS", "RF", "SPO+", "PFYL", "DBB", "CaVE", "CaVE+", "CaVE hybrid", "NCE", "CMAP", "LTR pointwise",
           "LTR pairwise", "LTR listwise", "DPO", "I-MLE", "AI-MLE", "NID", "PG", "MOM", "MOM x*",
           "MOM x* (cost-tuned)"]


def _latest(folder: Path) -> Path:
    versions = sorted(p for p in folder.iterdir() if p.is_dir())
    assert versions, f"no version under {folder}"
    return versions[-1] / folder.name


def test_dfl_benchmark_is_registered_outside_the_default_run():
    pipelines = register_pipelines()
    names = {n.name for n in pipelines["dfl_benchmark"].nodes}
    assert {"dfl_benchmark.noise0.report_dfl", "dfl_benchmark.noise05_n5000.plan_training",
            "dfl_benchmark.knapsack_noise05.report_dfl", "dfl_benchmark.knapsack_noise0_n5000.plan_training"} <= names
    # one problem at a time, and the knapsack at T = 100 alone (with its reports over that size)
    assert {n.name for n in pipelines["dfl_benchmark_shortest_path"].nodes} | {
        n.name for n in pipelines["dfl_benchmark_knapsack"].nodes} == names
    small = {n.name for n in pipelines["dfl_benchmark_knapsack_small"].nodes}
    assert "dfl_benchmark.knapsack_noise0.report_dfl" in small and not any("n1000" in name for name in small)
    # one family figure per problem, from the summary tables of both noise levels
    families = {n.name: n for n in pipelines["dfl_benchmark"].nodes if n.name.endswith("report_dfl_families")}
    assert sorted(families) == ["dfl_benchmark.knapsack.report_dfl_families",
                                "dfl_benchmark.shortest_path.report_dfl_families"]
    assert families["dfl_benchmark.knapsack.report_dfl_families"].inputs[:2] == [
        "dfl_benchmark.knapsack_noise0.summary_table", "dfl_benchmark.knapsack_noise05.summary_table"]
    assert "dfl_benchmark.knapsack.report_dfl_families" in small
    assert not any(n.namespace and n.namespace.startswith("dfl_benchmark") for n in pipelines["__default__"].nodes)


def test_base_protocol_is_pyepos_epochs_per_training_size_and_adam_on_batches_of_32():
    from mom_pipeline.experiments import parse_spec
    from mom_pipeline.experiments.train import estimator_class
    from mom_pipeline.methods.dfl import _DecisionFocusedModel
    from mom_pipeline.settings import CONFIG_LOADER_ARGS, ProjectConfigLoader

    loader = ProjectConfigLoader(str(Path(__file__).resolve().parents[2] / "conf"), env="local", **{
        k: v for k, v in CONFIG_LOADER_ARGS.items() if k != "default_run_env"})
    cells = {key: parse_spec(value["experiment"]) for key, value in loader["parameters"]["dfl_benchmark"].items()
             if isinstance(value, dict) and "experiment" in value}
    assert len(cells) == 12  # 2 problems x 2 noise levels x 3 sizes
    epochs = {100: 200, 1000: 20, 5000: 4}  # PyEPO: the same 20,000 sample visits at every size
    for key, spec in cells.items():
        trained_by_steps = [m for m in spec.methods.values() if "n_epochs" in estimator_class(m.estimator)().get_params()]
        assert len(trained_by_steps) == 16, key
        for method in trained_by_steps:
            assert method.params["n_epochs"] == epochs[spec.fixed["n_train"]], (key, method.label)
            assert method.params["batch_size"] == 32, (key, method.label)
            # every one by Adam (dfl._adam_lockstep), SPO+ too (SPOPlusAdam)
            assert issubclass(estimator_class(method.estimator), _DecisionFocusedModel), (key, method.label)


def test_smoke_run_reports_every_method_size_and_degree(project_copy):
    result = subprocess.run([KEDRO, "run", "--pipelines=dfl_benchmark", "--env=smoke"], cwd=project_copy,
                            capture_output=True, text=True, timeout=900,
                            env={**os.environ, "KEDRO_DISABLE_TELEMETRY": "true", "MOM_PROGRESS": "0"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    data = project_copy / "data"
    for noise in ("noise0", "noise05", "knapsack_noise0", "knapsack_noise05"):  # both problems
        report = data / "08_reporting" / f"dfl_benchmark.{noise}"
        table = pd.read_csv(_latest(report / "summary.csv"))
        assert list(dict.fromkeys(table["method"])) == METHODS
        assert sorted(table["n_train"].unique()) == [20, 30, 40] and sorted(table["degree"].unique()) == [1, 4]
        assert len(table) == len(METHODS) * 3 * 2 and np.isfinite(table["normalized_regret_mean"]).all()
        assert (table["training_seconds_mean"] > 0).all()
        assert _latest(report / "figure.png").stat().st_size > 0
        markdown = _latest(report / "summary.md").read_text()
        assert "| MOM x* |" in markdown and "T=40, deg 4" in markdown
        assert ("Knapsack 2 x 32" in markdown) == noise.startswith("knapsack")
        assert set(table["family"]) == {"two-stage", "regret-based", "perturbed", "solution pool", "cone-aligned",
                                        "MOM", "MOM x*"}
    for problem in ("shortest_path", "knapsack"):
        assert _latest(data / "08_reporting" / f"dfl_benchmark.{problem}" / "family_figure.png").stat().st_size > 0
    # The table's regret is the metric's normalized regret of the per-sample evaluation.
    cell = data / "07_model_output" / "dfl_benchmark.noise05_n1000"
    evaluation = pd.read_parquet(_latest(cell / "evaluation.parquet"))
    part = evaluation[(evaluation["method"] == "PFYL") & (evaluation["setting_value"] == 4)]
    table = pd.read_csv(_latest(data / "08_reporting" / "dfl_benchmark.noise05" / "summary.csv"))
    row = table[(table["method"] == "PFYL") & (table["n_train"] == 30) & (table["degree"] == 4)]
    assert len(part) == 15
    np.testing.assert_allclose(row["normalized_regret_mean"].item(),
                               normalized_regret(part["regret"], part["optimal_value"]), rtol=1e-9)
