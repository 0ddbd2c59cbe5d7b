"""Training node: a plan that trains every trial missing from the model store."""

from __future__ import annotations

import logging

from mom_pipeline.experiments import ExperimentSpec, TrialData, TrialSolutions, parse_spec
from mom_pipeline.experiments.compute import ComputeConfig, StorageConfig, imap_trials
from mom_pipeline.experiments.identity import check_generated, check_same_trial, training_key
from mom_pipeline.experiments.storage import TrainingPlan
from mom_pipeline.experiments.train import log_failed_cells, train_for_storage

log = logging.getLogger(__name__)


def train_models(problem_data: list[TrialData], solutions: list[TrialSolutions], experiment: ExperimentSpec,
                 compute: ComputeConfig, storage: StorageConfig) -> TrainingPlan:
    """Every method on every trial, lazily: the `models` dataset (datasets.TrialModelsDataset)
    reuses the trials it already stores and calls `train` with the others; they stream from
    the configured backend a few in flight at a time and each is written as soon as it is done.

    Before any work, the trials must be this run's parameters' (not an older run's
    problem_data) and each trial's solutions must be solved from the same data."""
    spec = parse_spec(experiment)  # Kedro hands over the parsed spec: a no-op then
    compute, storage = ComputeConfig.from_params(compute), StorageConfig.from_params(storage)
    check_generated(spec, problem_data)
    by_cell = {}
    for trial, solution in zip(problem_data, solutions, strict=True):
        check_same_trial("solutions", solution.data_key, trial, spec.name)
        by_cell[(trial.setting, trial.trial)] = (trial, solution)
    keys = {cell: training_key(spec, by_cell[cell][0], storage.keep_models) for cell in sorted(by_cell)}

    def train(cells: list) -> object:
        items = [(spec, *by_cell[cell], keys[cell], storage.keep_models) for cell in cells]
        for stored in imap_trials(train_for_storage, items, compute, desc=f"{spec.name}: train"):
            log_failed_cells(spec, stored.setting, stored.trial, stored.methods)
            yield stored

    return TrainingPlan(name=spec.name, keys=keys, train=train, keep_models=storage.keep_models,
                        min_free_bytes=int(storage.min_free_gb * 1e9), resume=storage.resume)
