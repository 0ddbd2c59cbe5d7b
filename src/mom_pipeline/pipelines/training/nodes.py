"""Training nodes: one partition of fitted models per trial, written as soon as it is done."""

from __future__ import annotations

from collections.abc import Callable

from mom_pipeline.experiments import TrialData, TrialSolutions, parse_spec
from mom_pipeline.experiments.compute import ComputeConfig, imap_trials
from mom_pipeline.experiments.train import TrainedMethod, parse_methods, partition_key, train_trial_resumable


def train_models(problem_data: list[TrialData], solutions: list[TrialSolutions], experiment: dict,
                 compute: dict) -> dict[str, Callable[[], dict[str, TrainedMethod]]]:
    """Train every method on every trial, lazily: the partitioned `models` dataset calls each
    partition's function when it saves it (in key order), and trials stream from the configured
    backend a few in flight at a time, so only a few trials' models are in memory at once.
    Finished trials are checkpointed (compute.checkpoint_dir): a killed run resumes."""
    spec = parse_spec(experiment)
    parse_methods(spec)  # fail before any work on a bad method configuration
    config = ComputeConfig.from_params(compute)
    keys = [partition_key(t.setting, t.trial) for t in problem_data]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    checkpoints = f"{config.checkpoint_dir}/{spec.name}" if config.checkpoint_dir else None
    stream = imap_trials(train_trial_resumable, [(spec, problem_data[i], solutions[i], checkpoints) for i in order],
                         config, desc=f"{spec.name}: train")
    pending = iter(order)
    finished: dict[str, dict[str, TrainedMethod]] = {}

    def partition(key: str):
        def compute_partition():
            while key not in finished:
                finished[keys[next(pending)]] = next(stream)
            return finished.pop(key)

        return compute_partition

    return {key: partition(key) for key in keys}
