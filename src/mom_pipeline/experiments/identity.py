"""One identity per trial: content hashes of what each stage of a trial depends on.

* `generation_key(spec, setting, trial)`: what generating the trial depends on (the problem,
  the setting's generator arguments, the trial's seed, the generator's code version). The
  generated `TrialData` records it, so a later stage run with other parameters (say another
  seed) refuses data generated with the old ones.
* `data_key(trial)`: that key plus a hash of the generated arrays: the trial's data itself.
  Solutions record the data key they were solved from, models the data key they were
  trained on, evaluation rows the data key they were evaluated on: every stage proves that
  it belongs to the same trial, or the run stops with a message naming both.
* `training_key(spec, trial, keep_models)`: the data key plus the basis mode, every method's
  configuration and the identity of the code that trains it (`code_identity`: a hash of the
  modules it runs and of the libraries' versions), and what is stored. It names the trial's
  stored models (data/06_models/<figure>/trials/<training key>.pkl), so a rerun finds a
  finished trial there and reuses it, while any change of what the result depends on gives
  a new key. Editing a docstring or a comment changes nothing; editing a method's or a
  solver's code retrains the methods that run it. The data generators' code is declared
  (bump `GENERATOR_VERSION`): the generation key is a column of the evaluation tables.
* `method_key(spec, trial, config, keep_models)`: the same for one method alone (its label
  aside, with the seed its tuning and fit draw from). Two experiments, or two runs of one
  experiment, that train the same method on the same data get the same key, so a method
  trained once is reused (`storage.MethodIndex`): figure 6 reuses figure 4's three MOM
  variants on their shared trials, and adding a method to a figure trains only that method.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from .code_identity import code_identity
from .spec import ExperimentSpec

#: Bump when the trial generators change the data they draw from a seed.
GENERATOR_VERSION = 1


def _digest(payload) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:20]


def generation_key(spec: ExperimentSpec, setting: int, trial: int) -> str:
    """Hash of the inputs that generate (setting, trial) of `spec`."""
    return _digest({
        "problem": spec.problem, "kwargs": spec.setting_kwargs(setting), "generator": GENERATOR_VERSION,
        "seed_state": [int(v) for v in spec.trial_seed(setting, trial).generate_state(4)],
    })


def array_digest(*arrays) -> str:
    """Hash of the arrays' shapes, dtypes and bytes."""
    digest = hashlib.sha256()
    for array in arrays:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.shape}{array.dtype}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()[:20]


def data_key(generation: str, trial_data) -> str:
    """Hash of the generation inputs and the generated samples of a `problems.Trial`."""
    arrays = [trial_data.train.Z, trial_data.train.C, trial_data.test.Z, trial_data.test.C]
    return _digest({"generation": generation, "arrays": array_digest(*arrays)})


def method_payload(spec: ExperimentSpec) -> list:
    """What the fitted models depend on besides the data: each method's configuration and
    the identity of the code that trains it."""
    return [{**config.model_dump(), "code": code_identity(config.estimator)} for config in spec.method_configs()]


def training_key(spec: ExperimentSpec, trial, keep_models: str) -> str:
    """The stored models' name of a generated trial (`TrialData`)."""
    digest = _digest({"data": trial.key, "basis_mode": spec.basis_mode, "methods": method_payload(spec),
                      "keep_models": keep_models})
    return f"s{trial.setting:02d}_t{trial.trial:03d}_{digest}"


def method_key(spec: ExperimentSpec, trial, config, keep_models: str) -> str:
    """The name of one method's result on a generated trial (`TrialData`): its data key, the
    basis mode, the method's configuration and code identity, the seed of its tuning split and
    fit, and what is stored; not its label nor the other methods of the experiment."""
    method_seed = spec.trial_seed(trial.setting, trial.trial, stream=1).generate_state(4)
    return _digest({"data": trial.key, "basis_mode": spec.basis_mode, "method": config.model_dump(exclude={"label"}),
                    "code": code_identity(config.estimator),
                    "seed_state": [int(v) for v in method_seed], "keep_models": keep_models})


class TrialMismatchError(RuntimeError):
    """Two stages' artefacts belong to different trials (e.g. versions of different runs)."""


def check_generated(spec: ExperimentSpec, trials) -> None:
    """Refuse trial data generated from other parameters than `spec`'s (another seed, size...)."""
    expected = {(s, t) for s, t in spec.cells()}
    found = {(t.setting, t.trial) for t in trials}
    if found != expected:
        raise TrialMismatchError(f"{spec.name}: problem_data holds {len(found)} trials but the parameters ask for "
                                 f"{len(expected)} ({spec.n_settings} settings x {spec.trials} trials): it was "
                                 "written by a run with other parameters; rerun from generate_data")
    for t in trials:
        if t.generation != generation_key(spec, t.setting, t.trial):
            raise TrialMismatchError(
                f"{spec.name}: problem_data of setting {t.setting}, trial {t.trial} was generated with other "
                f"parameters (problem, settings or seed) than this run's; rerun from generate_data")


def check_same_trial(what: str, key: str, trial, name: str) -> None:
    """Refuse an artefact (`what`) that records another trial's data key than `trial`'s."""
    if key != trial.key:
        raise TrialMismatchError(
            f"{name}: the {what} of setting {trial.setting}, trial {trial.trial} belong to other data (data key "
            f"{key[:12]}) than this run's problem_data ({trial.key[:12]}): they were written by another run (a "
            "newer or older version); rerun every stage after generate_data, e.g. without --from-nodes, and do "
            "not run two experiments on one data/ folder at once")


def check_tables(spec: ExperimentSpec, evaluation, trial_summary) -> None:
    """Refuse to report an evaluation and a trial summary of different trials, or of other
    parameters than `spec`'s (each row carries its trial's data key and generation key)."""
    columns = ["setting_value", "trial", "generation", "data_key"]
    for label, table in (("evaluation", evaluation), ("trial_summary", trial_summary)):
        missing = [c for c in columns if c not in table]
        if missing:
            raise TrialMismatchError(f"{spec.name}: {label} has no {missing} columns (written by an older version); "
                                     "rerun the evaluation stage")
    evaluated = set(map(tuple, evaluation[columns].drop_duplicates().to_numpy().tolist()))
    summarized = set(map(tuple, trial_summary[columns].drop_duplicates().to_numpy().tolist()))
    if evaluated != summarized:
        raise TrialMismatchError(f"{spec.name}: evaluation and trial_summary hold different trials (versions of "
                                 "different runs); rerun from evaluate_models")
    expected = {generation_key(spec, s, t) for s, t in spec.cells()}
    if {row[2] for row in evaluated} != expected:
        raise TrialMismatchError(f"{spec.name}: the evaluation holds other trials than this run's parameters ask for "
                                 f"({spec.n_settings} settings x {spec.trials} trials, seed {spec.seed}); it was "
                                 "written by a run with other parameters: rerun from generate_data")
