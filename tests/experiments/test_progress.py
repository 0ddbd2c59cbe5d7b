"""Progress: one log line per finished trial with an ETA off a terminal, from the main
process only, on every backend; workers never report."""

import logging

import pytest

from mom_pipeline.experiments.compute import ComputeConfig, imap_trials, map_trials
from mom_pipeline.experiments.progress import progress_enabled


def _square(x):
    return x * x


def _reports_progress(_):
    return progress_enabled()


@pytest.mark.parametrize("config", [ComputeConfig(), ComputeConfig(backend="loky", n_jobs=2)])
def test_one_log_line_per_trial_with_eta(config, caplog, monkeypatch):
    monkeypatch.setenv("MOM_PROGRESS", "0")
    with caplog.at_level(logging.INFO, logger="mom_pipeline.experiments.progress"):
        assert list(imap_trials(_square, [(i,) for i in range(5)], config, desc="figX: train")) == [0, 1, 4, 9, 16]
    lines = [r.getMessage() for r in caplog.records if r.name == "mom_pipeline.experiments.progress"]
    assert len(lines) == 5
    assert lines[0].startswith("figX: train: trial 1/5 done") and "ETA" in lines[0]
    assert lines[-1].startswith("figX: train: trial 5/5 done")


def test_workers_never_report_progress(monkeypatch):
    monkeypatch.setenv("MOM_PROGRESS", "1")  # forced on in the main process ...
    assert progress_enabled()
    # ... and still off in the loky workers (their bars would overwrite the main one)
    assert map_trials(_reports_progress, [(i,) for i in range(4)], ComputeConfig(backend="loky", n_jobs=2)) == [False] * 4
