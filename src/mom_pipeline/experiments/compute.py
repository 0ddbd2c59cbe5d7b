"""Fan independent trials out: sequentially, over local processes (joblib/loky), or on a
dask.distributed cluster. Every trial carries its own seed, so every backend gives the same
numbers as the sequential run."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from .progress import TrialProgress

log = logging.getLogger(__name__)

BACKENDS = ("sequential", "loky", "dask")


@dataclass(frozen=True)
class ComputeConfig:
    """backend: sequential | loky | dask; n_jobs: workers (-1: all cores);
    dask_address: scheduler address such as tcp://127.0.0.1:8786 (dask only);
    checkpoint_dir: where finished trials are kept so a killed run resumes (None: off)."""

    backend: str = "sequential"
    n_jobs: int = 1
    dask_address: str | None = None
    checkpoint_dir: str | None = None

    @classmethod
    def from_params(cls, params: dict | None) -> "ComputeConfig":
        params = dict(params or {})
        unknown = set(params) - {"backend", "n_jobs", "dask_address", "checkpoint_dir"}
        if unknown:
            raise ValueError(f"compute: unknown keys {sorted(unknown)}; use backend, n_jobs, dask_address, "
                             "checkpoint_dir")
        config = cls(**params)
        if config.backend not in BACKENDS:
            raise ValueError(f"compute.backend must be one of {BACKENDS}; got {config.backend!r}")
        if config.backend == "dask" and not config.dask_address:
            raise ValueError("compute.backend 'dask' needs compute.dask_address (e.g. tcp://127.0.0.1:8786)")
        if not isinstance(config.n_jobs, int) or config.n_jobs == 0 or config.n_jobs < -1:
            raise ValueError(f"compute.n_jobs must be a positive integer or -1; got {config.n_jobs!r}")
        return config

    @property
    def parallel(self) -> bool:
        return self.backend != "sequential" and self.n_jobs != 1

    def max_in_flight(self) -> int:
        """How many trials are in flight at once (bounds memory)."""
        if not self.parallel:
            return 1
        if self.n_jobs == -1:
            import os

            return 2 * (os.cpu_count() or 1)
        return 2 * self.n_jobs


@contextlib.contextmanager
def _backend(config: ComputeConfig, **options):
    import joblib

    if config.backend == "dask":
        try:
            from dask.distributed import Client
        except ImportError as error:
            raise ImportError("compute.backend 'dask' needs dask.distributed: pip install -e '.[dask]'") from error

        with Client(config.dask_address) as client:
            log.info("dask: computing on %s (%d workers)", config.dask_address,
                     len(client.scheduler_info().get("workers", {})))
            with joblib.parallel_config(backend="dask"):
                yield joblib.Parallel(n_jobs=config.n_jobs, **options)
    else:
        yield joblib.Parallel(n_jobs=config.n_jobs, backend=config.backend, **options)


def map_trials(fn: Callable, items: Iterable, config: ComputeConfig, desc: str = "") -> list:
    """[fn(*item) for item in items] on the configured backend, results in input order."""
    return list(imap_trials(fn, items, config, desc=desc))


def imap_trials(fn: Callable, items: Iterable, config: ComputeConfig, desc: str = "") -> Iterator:
    """fn(*item) for each item, in input order, as they finish.

    The workers stay busy while the caller consumes results (joblib's generator mode): at
    most `config.max_in_flight()` items are dispatched ahead of the one the caller waits for,
    so only a few results are in memory at once (a trial's random forest at T = 5000 is
    150 MB). The main process reports progress (a bar on a terminal, else a log line per
    finished trial with an ETA); the workers stay silent."""
    items = list(items)
    tracker = TrialProgress(len(items), desc)
    try:
        if not config.parallel:
            for item in items:
                result = fn(*item)
                tracker.update()
                yield result
            return
        import joblib

        with _backend(config, return_as="generator", pre_dispatch=config.max_in_flight()) as parallel:
            for result in parallel(joblib.delayed(fn)(*item) for item in items):
                tracker.update()
                yield result
    finally:
        tracker.close()
