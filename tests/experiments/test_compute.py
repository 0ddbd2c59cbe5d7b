"""Trials fanned out on loky and on a dask.distributed cluster give the sequential numbers."""

import re

import numpy as np
import pandas as pd
import pytest

from mom_pipeline.experiments import generate_experiment, parse_spec, solve_experiment
from mom_pipeline.experiments.compute import ComputeBackendError, ComputeConfig, imap_trials, map_trials
from mom_pipeline.experiments.online import run_online_trial

SPEC = {"name": "t", "problem": "knapsack", "sweep": {"param": "degree", "values": [1]},
        "fixed": {"n_train": 50, "n_test": 0, "prices": "uniform"}, "trials": 3, "seed": 5, "mode": "online",
        "methods": {"OGD": {"estimator": "OnlineMOM", "params": {"step_size": 1.0}},
                    "Perceptron": {"estimator": "Perceptron"}}}


def _online_tables(config):
    spec = parse_spec(SPEC)
    trials = generate_experiment(spec)
    solutions = solve_experiment(trials, "solver")
    frames = map_trials(run_online_trial, [(spec, t, s) for t, s in zip(trials, solutions)], config)
    return pd.concat(frames, ignore_index=True).drop(columns="seconds")


def test_config_validation():
    assert not ComputeConfig.from_params(None).parallel
    with pytest.raises(ValueError, match="backend"):
        ComputeConfig.from_params({"backend": "spark"})
    with pytest.raises(ValueError, match="dask_address"):
        ComputeConfig.from_params({"backend": "dask", "n_jobs": 2})
    with pytest.raises(ValueError, match="unknown parameter .workers."):
        ComputeConfig.from_params({"workers": 2})


def test_imap_trials_keeps_order():
    config = ComputeConfig(backend="loky", n_jobs=2)
    assert list(imap_trials(pow, [(i, 2) for i in range(9)], config)) == [i * i for i in range(9)]


def test_loky_worker_replacement_warning_is_filtered_and_others_are_not():
    """loky replaces a worker whose memory grew by 300 MB during a trial (the trial's result is
    kept) and warns about it from its manager thread; that warning must not reach the log of a
    long run, and no other warning may be swallowed with it."""
    import inspect
    import warnings

    from joblib.externals.loky import process_executor

    from mom_pipeline.experiments.compute import _backend

    message = "A worker stopped while some jobs were given to the executor."
    assert '"A worker stopped while some jobs were given to the "' in inspect.getsource(process_executor)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _backend(ComputeConfig(backend="loky", n_jobs=2)):
            warnings.warn(message + " This can be caused by a too short worker timeout.", UserWarning)
            warnings.warn("another warning", UserWarning)
    assert [str(w.message) for w in caught] == ["another warning"]


def test_loky_equals_sequential():
    sequential = _online_tables(ComputeConfig())
    parallel = _online_tables(ComputeConfig(backend="loky", n_jobs=2))
    pd.testing.assert_frame_equal(sequential, parallel)


@pytest.mark.slow
def test_dask_cluster_equals_sequential():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(host="127.0.0.1", n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        on_dask = _online_tables(ComputeConfig(backend="dask", n_jobs=2, dask_address=cluster.scheduler_address))
    sequential = _online_tables(ComputeConfig())
    pd.testing.assert_frame_equal(sequential, on_dask)
    assert np.isfinite(on_dask["cumulative_relative_regret"]).all()


def _die(value):
    import os

    os._exit(1)  # a worker killed during its trial (the OOM killer, kill -9)


@pytest.mark.slow  # a loky pool whose workers import the project (about 5 CPU-s)
def test_a_dead_loky_worker_is_named_not_a_failed_save():
    """Issue 51 item 11: it surfaced as "fig1.models: Failed while saving data"."""
    with pytest.raises(ComputeBackendError, match=r"(?s)a worker process died during a trial \(TerminatedWorkerError.*"
                                                  r"the next run resumes"):
        map_trials(_die, [(1,), (2,)], ComputeConfig(backend="loky", n_jobs=2))


def test_an_unreachable_dask_scheduler_names_the_address():
    pytest.importorskip("distributed")
    import dask

    address = "tcp://127.0.0.1:9"  # the discard port: nothing listens on it
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        with pytest.raises(ComputeBackendError, match=r"compute.dask_address 'tcp://127.0.0.1:9': no Dask scheduler "
                                                      r"answers there .*set compute.backend to loky"):
            map_trials(pow, [(2, 2)], ComputeConfig(backend="dask", n_jobs=2, dask_address=address))


def test_a_dead_dask_worker_names_the_cluster(monkeypatch):
    """The scheduler's KilledWorker (a worker died with the task: a real cluster takes minutes
    to give up, so the backend here raises it as the scheduler would)."""
    distributed = pytest.importorskip("distributed")
    import contextlib
    import types

    from mom_pipeline.experiments import compute

    def lost(tasks):
        worker = types.SimpleNamespace(address="tcp://127.0.0.1:40001")  # the scheduler's WorkerState
        raise distributed.scheduler.KilledWorker("train_trial-0", worker, 0)
        yield

    monkeypatch.setattr(compute, "_backend", lambda config, **options: contextlib.nullcontext(lost))
    address = "tcp://127.0.0.1:8786"
    with pytest.raises(ComputeBackendError, match=rf"worker process of the Dask cluster at '{address}' died during "
                                                  r"a trial \(KilledWorker: .*the next run resumes"):
        map_trials(pow, [(2, 2)], ComputeConfig(backend="dask", n_jobs=2, dask_address=address))


ADDRESS = "tcp://127.0.0.1:8786"


@pytest.mark.parametrize("kind, message", [("CommClosedError", "ConnectionPool closing."),
                                           ("OSError", f"Timed out trying to connect to {ADDRESS} after 30 s")])
def test_a_dask_scheduler_lost_during_the_trials_is_named(monkeypatch, kind, message):
    """A scheduler killed during a run surfaced as "training the models of fig1 failed
    (CommClosedError): ConnectionPool closing." or "(OSError): Timed out trying to connect to
    ..." (the client's errors, raised here as it raises them); a trial's own OSError is its own."""
    distributed = pytest.importorskip("distributed")
    import contextlib

    from mom_pipeline.experiments import compute

    error = {"CommClosedError": distributed.comm.CommClosedError, "OSError": OSError}[kind](message)

    def lost(tasks):
        raise error
        yield

    monkeypatch.setattr(compute, "_backend", lambda config, **options: contextlib.nullcontext(lost))
    config = ComputeConfig(backend="dask", n_jobs=2, dask_address=ADDRESS)
    with pytest.raises(ComputeBackendError, match=rf"the connection to the Dask scheduler at compute.dask_address "
                                                  rf"'{ADDRESS}' was lost during the trials \({kind}: "
                                                  rf"{re.escape(message)}\).*the next run resumes"):
        map_trials(pow, [(2, 2)], config)
    error = OSError("[Errno 28] No space left on device: '/data/trial.pkl'")
    with pytest.raises(OSError, match="No space left"):
        map_trials(pow, [(2, 2)], config)


def test_a_training_failure_is_not_reported_as_a_failed_save(tmp_path):
    from kedro.io.core import DatasetError

    from mom_pipeline.datasets import ModelTrainingDataset
    from mom_pipeline.experiments.compute import ComputeBackendError as Lost
    from mom_pipeline.experiments.storage import TrainingPlan

    def train(cells, reused):
        raise Lost("a worker process died during a trial")
        yield  # a generator, as the plan's train is

    plan = TrainingPlan(name="fig1", keys={(0, 0): "k" * 16}, train=train)
    with pytest.raises(DatasetError) as raised:
        ModelTrainingDataset(str(tmp_path / "models.json")).save(plan)
    assert str(raised.value).startswith("training the models of fig1 failed (ComputeBackendError): a worker process")
    assert "Failed while saving" not in str(raised.value)



@pytest.mark.slow  # joblib waits its 10 s for a worker
def test_a_dask_cluster_without_worker_names_the_scheduler():
    """Issue 51 item 11: the only worker (`dask worker --no-nanny`) killed -9 during a run
    surfaced as joblib's "DaskDistributedBackend has no worker after 10 seconds ... increase
    the joblib/dask connection timeout with: parallel_config(...)", the scheduler not named."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(host="127.0.0.1", n_workers=0, processes=True, dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        with pytest.raises(ComputeBackendError, match=rf"the Dask cluster at compute.dask_address '{address}' has no "
                                                      rf"worker: .*`dask worker {address}`.*the next run resumes"):
            map_trials(pow, [(2, 2), (3, 2)], ComputeConfig(backend="dask", n_jobs=2, dask_address=address))
