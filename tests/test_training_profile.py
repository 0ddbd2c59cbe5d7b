"""`scripts/training_profile.py`: a tuned method's refit is counted once (it is inside its tuning
time), a method without a grid by its one fit, and the refits alone in their own table."""

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "training_profile.py"


@pytest.fixture()
def training_profile(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("training_profile", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    folder = tmp_path / "data" / "07_model_output" / "fig4" / "hyperparameters.parquet" / "2026-11-28T00.00.00.000Z"
    folder.mkdir(parents=True)
    pd.DataFrame({
        "method": ["RbfMOM", "RbfMOM", "OLS", "MOM"],
        "tuning_seconds": [60.0, 120.0, 0.0, 30.0],  # the tuned ones include their refits
        "fit_seconds": [30.0, 60.0, 6.0, 3.0],
        "reused": [False, False, False, True],
    }).to_parquet(folder / "hyperparameters.parquet")
    monkeypatch.setattr(module, "ROOT", tmp_path)
    return module


def test_refits_are_counted_once(training_profile):
    minutes = training_profile.profile(["fig4"])
    assert minutes.loc["RbfMOM", "fig4"] == pytest.approx(3.0)  # 180 s, not 270 s
    assert minutes.loc["OLS", "fig4"] == pytest.approx(0.1)  # no grid: its one fit
    assert "MOM" not in minutes.index  # reused from another run: counted there
    assert minutes.loc["all methods", "all"] == pytest.approx(3.1)


def test_the_refits_alone(training_profile):
    refits = training_profile.profile(["fig4"], refit_only=True)
    assert refits.loc["RbfMOM", "fig4"] == pytest.approx(1.5)
    assert refits.loc["OLS", "fig4"] == 0.0
