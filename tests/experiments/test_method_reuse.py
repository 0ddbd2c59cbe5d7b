"""A method trained once on some data is not trained again: figure 6 reuses figure 4's MOM
variants on their shared trials, and a figure that gains a method trains only that method
(`identity.method_key`, `storage.MethodIndex`, `datasets.ModelTrainingDataset`)."""

import json
import re

import numpy as np
import pytest

import mom_pipeline.experiments.train as train_module
from mom_pipeline.data_cleanup import clean
from mom_pipeline.datasets import ModelTrainingDataset
from mom_pipeline.experiments import generate_experiment, parse_spec, solve_experiment
from mom_pipeline.experiments.compute import ComputeConfig, StorageConfig
from mom_pipeline.pipelines.experiment.nodes import evaluate_models, plan_training

SETTING = {"problem": "shortest_path", "sweep": {"param": "degree", "values": [2]},
           "fixed": {"n_train": 40, "n_test": 25}, "trials": 2, "seed": 5}
RIDGE = {"estimator": "Ridge", "grid": {"lam": [1e-2, 1.0]}}
MOM = {"estimator": "MOM", "grid": {"lam": [1e-2, 1.0]}}
FOREST = {"estimator": "RandomForest", "params": {"n_estimators": 5}}


def _spec(name, methods, **changes):
    return parse_spec({**SETTING, "name": name, "methods": methods, **changes})


@pytest.fixture
def trained(monkeypatch):
    """Every (experiment, method label, trial) that `train_method` trained, in order."""
    calls = []
    original = train_module.train_method

    def counting(spec, config, trial, solutions):
        calls.append((spec.name, config.label, trial.trial))
        return original(spec, config, trial, solutions)

    monkeypatch.setattr(train_module, "train_method", counting)
    return calls


def _run(spec, tmp_path, resume=True, trained_since=None):
    """Train `spec` through its models dataset (the shared method index under tmp_path) and
    load what was stored, as the pipeline does."""
    data = generate_experiment(spec)
    solutions = solve_experiment(data, spec.basis_mode, spec.name)
    plan = plan_training(data, solutions, spec, ComputeConfig(), StorageConfig(resume=resume, trained_since=trained_since))
    dataset = ModelTrainingDataset(str(tmp_path / spec.name / "models.json"),
                                 method_index=str(tmp_path / "method_index"))
    dataset.save(plan)
    models = dataset.load()
    return data, solutions, models


def test_a_figure_with_more_methods_on_the_same_data_trains_only_the_new_ones(tmp_path, trained, caplog):
    first = _spec("fig4", {"MOM": MOM, "Ridge": RIDGE})
    data, solutions, models = _run(first, tmp_path)
    assert sorted(trained) == [("fig4", label, t) for label in ("MOM", "Ridge") for t in (0, 1)]
    trained.clear()
    # another figure, same data: one more method, and the shared ones under other labels
    second = _spec("fig6", {"RF": FOREST, "linear MOM": MOM, "Ridge": RIDGE})
    with caplog.at_level("INFO"):
        _, _, reused = _run(second, tmp_path)
    assert sorted(trained) == [("fig6", "RF", 0), ("fig6", "RF", 1)]
    assert "reusing linear MOM, Ridge, trained on the same data" in caplog.text
    # what trained them: the commit and the code identity (a generator read twice left it empty)
    assert re.search(r"reusing linear MOM, Ridge, .* \(code [0-9a-f]{16}(, [0-9a-f]{16})*\)", caplog.text), caplog.text
    for t in (0, 1):
        mine, theirs = reused.load(0, t).methods, models.load(0, t).methods
        assert list(mine) == ["RF", "linear MOM", "Ridge"]  # the configured order
        assert mine["linear MOM"].label == "linear MOM" and mine["linear MOM"].reused_from.endswith(".pkl")
        assert not mine["RF"].reused_from
        Z = data[t].data.test.Z
        np.testing.assert_array_equal(mine["linear MOM"].model.predict_cost(Z), theirs["MOM"].model.predict_cost(Z))
        assert mine["linear MOM"].best_params == theirs["MOM"].best_params
    # the evaluation reads reused methods like any other; the hyperparameter table says which
    _, hyperparameters = evaluate_models(generate_experiment(second), solutions, reused, second)
    assert dict(zip(hyperparameters["method"], hyperparameters["reused"])) == {
        "RF": False, "linear MOM": True, "Ridge": True}
    # nothing left to train: a third run of either figure trains nothing
    trained.clear()
    _run(second, tmp_path)
    _run(first, tmp_path)
    assert trained == []


@pytest.mark.slow
def test_a_changed_method_is_trained_again_and_only_it(tmp_path, trained):
    _run(_spec("fig1", {"MOM": MOM, "Ridge": RIDGE}), tmp_path)
    trained.clear()
    _run(_spec("fig1", {"MOM": {**MOM, "grid": {"lam": [1.0]}}, "Ridge": RIDGE}), tmp_path)
    assert sorted(trained) == [("fig1", "MOM", 0), ("fig1", "MOM", 1)]
    trained.clear()
    # other data (another seed), another basis mode or resume off: nothing is reused
    _run(_spec("fig1", {"MOM": MOM, "Ridge": RIDGE}, seed=6), tmp_path)
    _run(_spec("fig1", {"MOM": MOM, "Ridge": RIDGE}, basis_mode="support"), tmp_path)
    _run(_spec("fig1", {"MOM": MOM, "Ridge": RIDGE}), tmp_path, resume=False)
    assert len(trained) == 3 * 4


def test_trained_since_reuses_only_what_was_trained_after_it(tmp_path, trained):
    """What benchmarks/experiments.py relies on: resume off, yet the figures of one benchmark
    share work, and nothing trained before the benchmark started is reused."""
    import time

    _run(_spec("fig4", {"MOM": MOM}), tmp_path)
    start = time.time() + 5.0  # "the benchmark starts later": the files above are older
    trained.clear()
    _run(_spec("fig6", {"MOM": MOM, "Ridge": RIDGE}), tmp_path, resume=False, trained_since=start)
    assert sorted(trained) == [("fig6", label, t) for label in ("MOM", "Ridge") for t in (0, 1)]
    trained.clear()
    _run(_spec("fig6", {"MOM": MOM, "Ridge": RIDGE}), tmp_path, resume=False, trained_since=start - 10.0)
    assert trained == []


def test_a_pointer_to_a_removed_or_foreign_file_is_a_miss_and_the_method_is_trained(tmp_path, trained):
    _run(_spec("fig4", {"MOM": MOM}), tmp_path)
    index = tmp_path / "method_index"
    by_trial = {json.loads(p.read_text())["file"].split("/")[-1][:9]: p for p in index.glob("*.json")}
    assert sorted(by_trial) == ["s00_t000_", "s00_t001_"]
    # trial 1's pointer redirected to trial 0's file (a complete file, but of other data)
    by_trial["s00_t001_"].write_text(by_trial["s00_t000_"].read_text())
    trained.clear()
    _run(_spec("fig6", {"MOM": MOM, "Ridge": RIDGE}), tmp_path)
    assert sorted(trained) == [("fig6", "MOM", 1), ("fig6", "Ridge", 0), ("fig6", "Ridge", 1)]
    # the pointers now name fig6's files; with those gone, both trials train MOM again
    for path in (tmp_path / "fig6" / "trials").glob("*.pkl"):
        path.unlink()
    trained.clear()
    _run(_spec("fig7", {"MOM": MOM}), tmp_path)
    assert sorted(trained) == [("fig7", "MOM", 0), ("fig7", "MOM", 1)]
    # a garbled pointer is a miss too (logged), not an error
    for pointer in index.glob("*.json"):
        pointer.write_text('{"file": 3}')
    trained.clear()
    _run(_spec("fig5", {"MOM": MOM}), tmp_path)
    assert sorted(trained) == [("fig5", "MOM", 0), ("fig5", "MOM", 1)]


def test_clean_data_removes_the_pointers_of_removed_model_files(tmp_path):
    data = tmp_path / "data"
    models = data / "06_models"
    trials = models / "fig1" / "trials"
    trials.mkdir(parents=True)
    for key in ("old", "kept"):
        (trials / f"{key}.pkl").write_bytes(b"m")
    import os

    os.utime(trials / "old.pkl", (0, 0))
    manifest = models / "fig1" / "models.json" / "2026-01-01T00.00.00.000Z" / "models.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"trials": [{"setting": 0, "trial": 0, "key": "kept"}]}))
    index = models / "method_index"
    index.mkdir()
    for name, key in (("a", "old"), ("b", "kept"), ("c", "never")):
        (index / f"{name}.json").write_text(json.dumps({"file": f"../fig1/trials/{key}.pkl", "label": "MOM"}))
    assert sorted(p.name for p in clean(data, keep=1, dry_run=True) if p.parent == index) == ["a.json", "c.json"]
    assert (index / "a.json").exists()
    clean(data, keep=1)
    assert sorted(p.name for p in index.iterdir()) == ["b.json"]
    assert sorted(p.name for p in trials.iterdir()) == ["kept.pkl"]
