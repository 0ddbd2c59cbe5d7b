"""Where a trial's fitted models live: one file per trial, written once, atomically.

A finished trial is stored as ``<directory>/<training key>.pkl`` (`identity.training_key`):
the file is both the trial's model partition and its checkpoint. It is written to a
temporary file first (named with the writer's process id) and renamed into place, so a file
with a final name is always complete and a killed run loses nothing that was finished. Files
are never overwritten by a different result (the key changes instead), so a run that fails
half-way leaves the previous complete set untouched.

What is stored per method depends on ``keep_models``:

* ``all``: every fitted model as it is;
* ``light`` (default): full models for every method except the random forest, whose fitted
  trees dominate the disk (38 MB per figure-1 trial, 150 MB at T = 5000). For the forest the
  trial keeps its predicted costs on the test samples (all that evaluation and the figures
  read) and the recipe to refit it: the same estimator, hyperparameters and seed on the
  same training samples rebuild the same forest (`StoredPredictions.refit`);
* ``none``: the test predictions of every method only.

`MethodIndex` finds a method already trained on the same data with the same configuration
(`identity.method_key`) in any experiment's trial files, so it is not trained again.
"""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import joblib
import numpy as np

from ..atomic_files import TEMPORARY_SUFFIX, is_stale_temporary, write_atomically
from ..methods.registry import method_entry
from .identity import array_digest

log = logging.getLogger(__name__)

KEEP_MODELS = ("none", "light", "all")
#: Estimators whose fitted state is large and cheap to rebuild from the seed.
HEAVY_ESTIMATORS = frozenset({"RandomForest"})


class DiskFullError(OSError):
    """The next trial would not fit on the disk (with the configured margin)."""


@dataclass(frozen=True, eq=False)
class StoredPredictions:
    """A method stored without its fitted state: its predicted costs on the trial's test
    samples and the recipe to refit it (estimator, hyperparameters including the seed)."""

    estimator: str
    params: dict
    x_star_only: bool
    test_digest: str
    test_costs: np.ndarray
    needs_costs: bool = True
    # fitted on standardized features (`MOM.fit_standardized`: a model tuned from decisions)
    standardized: bool = False

    def predict_cost(self, Z) -> np.ndarray:
        """The stored predictions when `Z` is the trial's test features; otherwise refit first."""
        if array_digest(np.asarray(Z, dtype=float)) != self.test_digest:
            raise ValueError(f"this stored {self.estimator} keeps its predictions on the trial's test samples only "
                             "(keep_models: light or none); rebuild the model with .refit(trial, solutions) to "
                             "predict on other contexts, or rerun with storage.keep_models=all")
        return self.test_costs.copy()

    def refit(self, trial, solutions):
        """The fitted model, rebuilt deterministically from the trial's training samples."""
        data = trial.data
        model = method_entry(self.estimator).cls(**self.params)
        basis = None if self.x_star_only else solutions.train.basis
        if self.standardized:
            return model.fit_standardized(data.train.Z, solutions.train.x, lp=data.lp, basis=basis)
        return model.fit(data.train.Z, solutions.train.x, lp=data.lp, basis=basis,
                         C=data.train.C if model.needs_costs else None)


@dataclass(frozen=True, eq=False)
class StoredTrial:
    """What a trial's model file holds: its keys, and every method's `TrainedMethod`."""

    key: str
    data_key: str
    setting: int
    trial: int
    methods: dict = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class TrainingPlan:
    """What `plan_training` hands to the models dataset, whose save runs it: per (setting,
    trial), its training key, its data key and the method keys of its methods ({label:
    `identity.method_key`});
    and `train(cells, reused)`, which trains the given cells and yields their `StoredTrial`
    as they finish (the dataset skips the cells already stored, and passes the methods it
    found already trained: reused = {cell: {label: (method, trial file)}})."""

    name: str
    keys: dict
    train: Callable[[list, dict], Iterator[StoredTrial]]
    method_keys: dict = field(default_factory=dict)
    data_keys: dict = field(default_factory=dict)
    keep_models: str = "light"
    min_free_bytes: int = 0
    resume: bool = True
    trained_since: float | None = None


def lighten(methods: dict, trial, keep_models: str, configs: dict) -> dict:
    """The methods as they are stored under `keep_models` (see the module docstring)."""
    import dataclasses

    if keep_models not in KEEP_MODELS:
        raise ValueError(f"storage.keep_models must be one of {KEEP_MODELS}; got {keep_models!r}")
    out = {}
    Z = np.asarray(trial.data.test.Z, dtype=float)
    for label, tm in methods.items():
        light = keep_models == "none" or (keep_models == "light" and tm.estimator in HEAVY_ESTIMATORS)
        if light:
            stored = StoredPredictions(estimator=tm.estimator, params=tm.model.get_params(),
                                       x_star_only=configs[label].x_star_only, test_digest=array_digest(Z),
                                       test_costs=np.asarray(tm.model.predict_cost(Z), dtype=float),
                                       needs_costs=tm.model.needs_costs,
                                       standardized=hasattr(tm.model, "feature_scaling_"))
            tm = dataclasses.replace(tm, model=stored)
        out[label] = tm
    return out


def serialize(obj) -> bytes:
    buffer = io.BytesIO()
    joblib.dump(obj, buffer, compress="lz4")  # 7x faster than zlib at 10% more disk
    return buffer.getvalue()


class TrialStore:
    """Model files of one experiment in one directory, keyed by training key."""

    def __init__(self, directory: str | os.PathLike, min_free_bytes: int = 0):
        self.directory = Path(directory)
        self.min_free_bytes = int(min_free_bytes)

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.pkl"

    def remove_stale_temporaries(self) -> list[Path]:
        """Delete temporary files left by killed writers (their process is gone)."""
        removed = []
        for path in self.directory.glob(".*" + TEMPORARY_SUFFIX):
            if is_stale_temporary(path):
                path.unlink(missing_ok=True)
                removed.append(path)
        if removed:
            log.info("removed %d unfinished temporary model files in %s", len(removed), self.directory)
        return removed

    def load(self, key: str) -> StoredTrial | None:
        """The stored trial, or None when it is absent or unreadable (logged with its path)."""
        path = self.path(key)
        if not path.exists():
            return None
        try:
            stored = joblib.load(path)
        except Exception as exc:  # noqa: BLE001 - any unreadable file is recomputed
            log.warning("unreadable model file %s (%s: %s): the trial is recomputed", path, type(exc).__name__, exc)
            return None
        if not isinstance(stored, StoredTrial) or stored.key != key:
            log.warning("model file %s does not hold trial %s: the trial is recomputed", path, key)
            return None
        return stored

    def check_space(self, size: int, what: str) -> None:
        """Raise DiskFullError when writing `size` bytes would leave less than the margin."""
        self.directory.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(self.directory).free
        if free - size < self.min_free_bytes:
            raise DiskFullError(
                f"not enough disk space to store {what}: it needs {size / 1e6:.1f} MB and {free / 1e6:.1f} MB are "
                f"free under {self.directory} (storage.min_free_gb keeps {self.min_free_bytes / 1e9:.2f} GB free). "
                "Free space (make clean-data KEEP=1 removes old versions) or store less "
                "(storage.keep_models=light or none); finished trials are kept and the run resumes from them")

    def save(self, stored: StoredTrial) -> Path:
        """Write atomically (temporary file, fsync, rename); the disk check comes first."""
        payload = serialize(stored)
        self.check_space(len(payload), f"setting {stored.setting}, trial {stored.trial}")
        return write_atomically(self.path(stored.key), payload)  # readers see all of it or nothing


class MethodIndex:
    """Which stored trial file holds a method's result, by method key (`identity.method_key`).

    One small pointer file per key, ``<directory>/<method key>.json``, shared by every
    experiment: a method trained once on some data (figure 4's kernel MOMs) is found by any
    experiment that trains it on the same data again (figure 6 on the same trials), and a
    figure that gains a method trains only that one. Pointers are written atomically and only
    ever point to complete trial files; a pointer whose file was cleaned up, or that no longer
    holds the method on the same data, is a miss (the method is trained again)."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)

    def _pointer(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def _read(self, pointer: Path) -> tuple[Path, str]:
        """(trial file, label) of a pointer file; OSError, ValueError, KeyError or TypeError
        when it is missing or unreadable."""
        content = json.loads(pointer.read_text())
        return (self.directory / str(content["file"])).resolve(), str(content["label"])

    def targets(self) -> dict[Path, Path | None]:
        """Every pointer file and the trial file it names (None: unreadable)."""
        out = {}
        for pointer in sorted(self.directory.glob("*.json")):
            try:
                out[pointer] = self._read(pointer)[0]
            except (OSError, ValueError, KeyError, TypeError):
                out[pointer] = None
        return out

    def find(self, keys: dict[str, str], data_key: str,
             written_since: float | None = None) -> dict[str, tuple[object, Path]]:
        """{label: (stored method, trial file)} for the labels of `keys` ({label: method key})
        found on the trial with `data_key` (in trial files written since `written_since`, Unix
        seconds, when given); each trial file is read once."""
        pointers = {}
        for label, key in keys.items():
            try:
                pointers[label] = self._read(self._pointer(key))
            except FileNotFoundError:
                continue
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("unreadable method pointer %s (%s: %s): the method is trained again", self._pointer(key),
                            type(exc).__name__, exc)
        found, trials = {}, {}
        for label, (path, stored_label) in pointers.items():
            if path not in trials:  # a trial file is named by its training key, which load checks
                fresh = path.exists() and (written_since is None or path.stat().st_mtime >= written_since)
                trials[path] = TrialStore(path.parent).load(path.stem) if fresh else None
            stored = trials[path]
            method = None if stored is None else stored.methods.get(stored_label)
            if method is None or getattr(method, "data_key", None) != data_key:
                log.info("method pointer %s is stale (%s): the method is trained again", self._pointer(keys[label]),
                         "its trial file is gone or older than storage.trained_since" if stored is None
                         else "the file holds no such method on this data")
                continue
            found[label] = (method, path)
        return found

    def record(self, keys: dict[str, str], path: Path) -> None:
        """Point every method key of `keys` ({label: key}) to the stored trial file `path`."""
        self.directory.mkdir(parents=True, exist_ok=True)
        relative = os.path.relpath(Path(path).resolve(), self.directory.resolve())
        for label, key in keys.items():
            write_atomically(self._pointer(key), json.dumps({"file": relative, "label": label}))
