"""Issue 16 and issue 12 items 6, 7, 10: what is stored per trial, atomically, and its identity."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mom_pipeline.experiments import generate_experiment, parse_spec, solve_experiment
from mom_pipeline.experiments.identity import training_key
from mom_pipeline.experiments.storage import DiskFullError, StoredPredictions, TrialStore
from mom_pipeline.experiments.train import train_for_storage

SPEC = {"name": "t", "problem": "shortest_path", "sweep": {"param": "degree", "values": [2]},
        "fixed": {"n_train": 40, "n_test": 25}, "trials": 1, "seed": 5,
        "methods": {"RF": {"estimator": "RandomForest", "params": {"n_estimators": 10}},
                    "Ridge": {"estimator": "Ridge", "grid": {"lam": [1e-2, 1.0]}}}}


@pytest.fixture(scope="module")
def trial():
    spec = parse_spec(SPEC)
    (data,) = generate_experiment(spec)
    (solutions,) = solve_experiment([data], "solver")
    return spec, data, solutions


def test_light_model_reproduces_its_test_decisions_and_refits_from_its_seed(trial):
    spec, data, solutions = trial
    full = train_for_storage(spec, data, solutions, "k", "all")
    light = train_for_storage(spec, data, solutions, "k", "light")
    forest, stored = full.methods["RF"].model, light.methods["RF"].model
    assert isinstance(stored, StoredPredictions)
    assert light.methods["Ridge"].model.__class__ is full.methods["Ridge"].model.__class__  # small: kept whole
    lp, Z = data.data.lp, data.data.test.Z
    np.testing.assert_array_equal(lp.solve(stored.predict_cost(Z), need_basis=False).x,
                                  lp.solve(forest.predict_cost(Z), need_basis=False).x)
    # new contexts: the light model says how to get the forest back, and the refit is the same forest
    with pytest.raises(ValueError, match="refit"):
        stored.predict_cost(Z[:3] + 1.0)
    np.testing.assert_array_equal(stored.refit(data, solutions).predict_cost(Z[:3] + 1.0),
                                  forest.predict_cost(Z[:3] + 1.0))
    # and it is much smaller on disk
    from mom_pipeline.experiments.storage import serialize

    assert len(serialize(light)) < len(serialize(full)) / 3


def test_store_is_atomic_checked_and_reads_only_complete_files(trial, tmp_path, caplog):
    spec, data, solutions = trial
    key = training_key(spec, data, "light")
    stored = train_for_storage(spec, data, solutions, key, "light")
    store = TrialStore(tmp_path)
    path = store.save(stored)
    assert store.load(key).data_key == data.key and list(tmp_path.iterdir()) == [path]
    for content in (b"", path.read_bytes()[:100], b"garbage"):  # empty, truncated, garbage (item 7)
        path.write_bytes(content)
        with caplog.at_level("WARNING"):
            assert store.load(key) is None
        assert str(path) in caplog.text
    # temporary files of dead writers are removed, a live writer's is kept (item 10)
    dead, live = tmp_path / f".{key}.999999999.tmp", tmp_path / f".{key}.{os.getpid()}.tmp"
    dead.write_bytes(b"x"), live.write_bytes(b"x")
    store.remove_stale_temporaries()
    assert not dead.exists() and live.exists()
    # disk check: a trial that would not fit is refused before anything is written (issue 16)
    full = TrialStore(tmp_path / "full", min_free_bytes=10**18)
    with pytest.raises(DiskFullError, match="not enough disk space"):
        full.save(stored)
    assert not any((tmp_path / "full").iterdir())


@pytest.mark.slow  # runs Python in a subprocess
def test_training_key_ignores_docstrings_but_not_configuration(trial, tmp_path):
    """Item 6: the key hashes what the trial depends on, not the package source."""
    spec, data, solutions = trial
    key = training_key(spec, data, "light")
    assert training_key(parse_spec(dict(SPEC)), data, "light") == key
    other = dict(SPEC, methods={**SPEC["methods"], "Ridge": {"estimator": "Ridge", "grid": {"lam": [1.0]}}})
    assert training_key(parse_spec(other), data, "light") != key
    assert training_key(spec, data, "all") != key
    # a copy of the package with an edited docstring computes the same key
    import shutil

    import mom_pipeline

    package = Path(mom_pipeline.__file__).parent
    shutil.copytree(package, tmp_path / "mom_pipeline", ignore=shutil.ignore_patterns("__pycache__"))
    baselines = tmp_path / "mom_pipeline" / "methods" / "baselines.py"
    baselines.write_text(baselines.read_text().replace('"""', '"""An edited docstring. ', 1))
    script = ("import mom_pipeline, json, sys\nfrom mom_pipeline.experiments import generate_experiment, parse_spec\n"
              "from mom_pipeline.experiments.identity import training_key\nassert mom_pipeline.__file__.startswith(sys.argv[2])\n"
              "spec = parse_spec(json.loads(sys.argv[1]))\nprint(training_key(spec, generate_experiment(spec)[0], 'light'))")
    import json

    result = subprocess.run([sys.executable, "-c", script, json.dumps(SPEC), str(tmp_path)], capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == key


def test_clean_data_keeps_the_newest_versions_and_their_models(tmp_path):
    """Issue 12 item 6 / issue 16: a documented clean-up keeps the newest N versions."""
    import json
    import time

    from mom_pipeline.data_cleanup import clean, report

    data = tmp_path / "data"
    table = data / "07_model_output" / "fig1" / "evaluation.parquet"
    versions = [f"2026-01-0{i}T00.00.00.000Z" for i in range(1, 5)]
    for version in versions:
        (table / version).mkdir(parents=True)
        (table / version / "evaluation.parquet").write_bytes(b"x" * 10)
    trials = data / "06_models" / "fig1" / "trials"
    trials.mkdir(parents=True)
    for key in ("old", "kept", "unlisted_new"):
        (trials / f"{key}.pkl").write_bytes(b"m")
    os.utime(trials / "old.pkl", (0, 0))
    for version, key in (("2026-01-01T00.00.00.000Z", "old"), ("2026-01-03T00.00.00.000Z", "kept"),
                         ("2026-01-04T00.00.00.000Z", "kept")):
        manifest = data / "06_models" / "fig1" / "models.json" / version / "models.json"
        manifest.parent.mkdir(parents=True)
        manifest.write_text(json.dumps({"trials": [{"setting": 0, "trial": 0, "key": key}]}))
    time.sleep(0.01)
    (trials / "unlisted_new.pkl").write_bytes(b"m")  # a killed run's finished trial, newer than every manifest
    (data / "06_models" / "checkpoints").mkdir()
    removed = clean(data, keep=2)
    assert sorted(p.name for p in table.iterdir()) == versions[-2:]
    assert sorted(p.name for p in trials.iterdir()) == ["kept.pkl", "unlisted_new.pkl"]
    assert not (data / "06_models" / "checkpoints").exists() and len(removed) == 5
    assert "fig1" in report(data) and "total data/" in report(data)


def test_every_keep_models_value_gives_the_same_evaluation(trial):
    """keep_models changes what is stored, never the evaluation."""
    import pandas as pd

    from mom_pipeline.experiments.evaluate import evaluate_trial

    spec, data, solutions = trial
    tables = {}
    for keep in ("all", "light", "none"):
        stored = train_for_storage(spec, data, solutions, "k", keep)
        kinds = {label: isinstance(tm.model, StoredPredictions) for label, tm in stored.methods.items()}
        assert kinds == {"all": {"RF": False, "Ridge": False}, "light": {"RF": True, "Ridge": False},
                         "none": {"RF": True, "Ridge": True}}[keep]
        tables[keep] = evaluate_trial(spec, data, solutions, stored.methods).drop(columns="fit_seconds")
    pd.testing.assert_frame_equal(tables["all"], tables["light"])
    pd.testing.assert_frame_equal(tables["all"], tables["none"])
