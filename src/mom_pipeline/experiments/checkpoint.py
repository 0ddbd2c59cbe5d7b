"""Per-trial checkpoints so that a killed run resumes where it stopped.

A finished trial's fitted models are written to ``<directory>/<key>.pkl`` atomically (a
temporary file in the same directory, then ``os.replace``), so a file that exists is
complete. The key hashes everything the trial's result depends on (the experiment's
problem, fixed settings, the swept value, the trial's seed and the method configurations)
and the package's source code (a hash of its .py files): change any of them and the trial is
recomputed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

import joblib

from .. import __version__
from .spec import ExperimentSpec

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of the package's Python sources, so edited code never reuses stale results."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def trial_key(spec: ExperimentSpec, setting: int, trial: int, stage: str = "train") -> str:
    """A stable hash of what (setting, trial) of `spec` computes in `stage`."""
    payload = {
        "stage": stage, "version": __version__, "code": code_fingerprint(), "problem": spec.problem, "fixed": spec.fixed,
        "sweep_param": spec.sweep_param, "value": spec.sweep_values[setting], "trial": trial,
        "seed_state": [int(v) for v in spec.trial_seed(setting, trial).generate_state(4)],
        "basis_mode": spec.basis_mode, "methods": spec.methods,
    }
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return f"{spec.name}_s{setting:02d}_t{trial:03d}_{digest}"


class CheckpointStore:
    """Atomic pickle files in one directory; `None` directory disables checkpoints."""

    def __init__(self, directory: str | os.PathLike | None):
        self.directory = Path(directory) if directory else None

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.pkl"

    def load(self, key: str):
        """The stored object, or None when absent (or checkpoints are disabled)."""
        if self.directory is None or not self._path(key).exists():
            return None
        return joblib.load(self._path(key))

    def save(self, key: str, obj) -> None:
        if self.directory is None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=f".{key}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as file:
                joblib.dump(obj, file, compress="lz4")  # 7x faster than zlib, 10% larger
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self._path(key))  # atomic: readers see all of it or nothing
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
