"""Fan independent trials out: sequentially, over local processes (joblib/loky), or on a
dask.distributed cluster. Every trial carries its own seed, so every backend gives the same
numbers as the sequential run."""

from __future__ import annotations

import contextlib
import logging
import os
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Annotated, ClassVar, Literal

from pydantic import Field, StrictBool, StrictInt, model_validator

from .progress import TrialProgress
from .spec import SpecError, StrictModel
from ..allocator import keep_freed_memory
from .storage import KEEP_MODELS

log = logging.getLogger(__name__)

BACKENDS = ("sequential", "loky", "dask")


class ComputeBackendError(RuntimeError):
    """The configured backend cannot compute: no Dask scheduler at compute.dask_address, or a
    worker process died during a trial (killed, or out of memory)."""


class ComputeConfig(StrictModel):
    """backend: sequential | loky | dask; n_jobs: workers (-1: all cores);
    dask_address: scheduler address such as tcp://127.0.0.1:8786 (dask only).

    Kedro builds it from ``params:compute`` before any node runs, so a bad backend, worker
    count or key stops the run at once, naming the parameter."""

    where: ClassVar[str] = "compute"
    backend: Literal[BACKENDS] = "sequential"
    n_jobs: StrictInt = 1
    dask_address: str | None = None

    @model_validator(mode="after")
    def _consistent(self):
        if self.backend == "dask" and not self.dask_address:
            raise SpecError("compute.backend 'dask' needs compute.dask_address (e.g. tcp://127.0.0.1:8786)")
        if self.n_jobs == 0 or self.n_jobs < -1:
            raise SpecError(f"compute.n_jobs must be a positive integer or -1; got {self.n_jobs!r}")
        return self

    @classmethod
    def from_params(cls, params: "dict | ComputeConfig | None") -> "ComputeConfig":
        return params if isinstance(params, cls) else cls.model_validate(dict(params or {}))

    @property
    def parallel(self) -> bool:
        return self.backend != "sequential" and self.n_jobs != 1

    def max_in_flight(self) -> int:
        """How many trials are in flight at once (bounds memory)."""
        if not self.parallel:
            return 1
        if self.n_jobs == -1:
            return 2 * (os.cpu_count() or 1)
        return 2 * self.n_jobs


class StorageConfig(StrictModel):
    """keep_models: none | light | all (experiments/storage.py); min_free_gb: a run stops
    with a clear message before writing a trial that would leave less free disk than this;
    resume: reuse the stored trials of earlier runs, and the methods any experiment already
    trained on the same data (false: train every trial again); trained_since (Unix seconds):
    reuse only what was trained since then, even with resume false (benchmarks/experiments.py
    passes its start, so the figures of one benchmark share work and nothing older is reused)."""

    where: ClassVar[str] = "storage"
    keep_models: Literal[KEEP_MODELS] = "light"
    min_free_gb: Annotated[float, Field(ge=0)] = 0.5
    resume: StrictBool = True
    trained_since: Annotated[float, Field(ge=0)] | None = None

    @classmethod
    def from_params(cls, params: "dict | StorageConfig | None") -> "StorageConfig":
        return params if isinstance(params, cls) else cls.model_validate(dict(params or {}))


def _exit_with_parent(parent: int) -> None:
    """loky worker initializer: exit when the main process is gone (even after a SIGKILL,
    which gives it no chance to stop its workers); otherwise idle workers would linger."""
    import threading

    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _in_worker(fn: Callable, *args):
    """fn(*args) in a worker process, under the process settings of a Kedro run
    (`allocator.keep_freed_memory`, applied once per process; importing the package does not)."""
    keep_freed_memory()
    return fn(*args)


@contextlib.contextmanager
def _backend(config: ComputeConfig, **options):
    import joblib

    if config.backend == "dask":
        try:
            from dask.distributed import Client
        except ImportError as error:
            raise ImportError("compute.backend 'dask' needs dask.distributed: pip install -e '.[dask]'") from error

        try:
            client = Client(config.dask_address)
        except (OSError, TimeoutError) as error:
            raise ComputeBackendError(
                f"compute.dask_address {config.dask_address!r}: no Dask scheduler answers there "
                f"({type(error).__name__}: {error}); start one (`dask scheduler`, then `dask worker "
                f"{config.dask_address}`), correct the address, or set compute.backend to loky or sequential"
            ) from error
        with client:
            log.info("dask: computing on %s (%d workers)", config.dask_address,
                     len(client.scheduler_info().get("workers", {})))
            with joblib.parallel_config(backend="dask"):
                yield joblib.Parallel(n_jobs=config.n_jobs, **options)
    else:
        if config.backend == "loky":
            # loky replaces a worker whose memory grew by 300 MB over a trial (a forest at
            # T = 5000, or allocator arenas kept after large fits) and warns "A worker stopped
            # while some jobs were given to the executor" from its manager thread. The trial's
            # result is kept and a fresh worker takes the next one; the warning only alarms
            # whoever reads the log of a long run.
            warnings.filterwarnings("ignore", message="A worker stopped while some jobs were given",
                                    category=UserWarning)
            options.update(initializer=_exit_with_parent, initargs=(os.getpid(),), idle_worker_timeout=60)
        yield joblib.Parallel(n_jobs=config.n_jobs, backend=config.backend, **options)


def _lost_worker_errors(config: ComputeConfig) -> tuple:
    """The exceptions by which the backend reports a worker process that died."""
    if config.backend == "dask":
        from distributed.scheduler import KilledWorker

        return (KilledWorker,)
    from joblib.externals.loky.process_executor import TerminatedWorkerError

    return (TerminatedWorkerError,)


def _scheduler_lost(config: ComputeConfig, error: OSError) -> bool:
    """Whether `error` is the Dask client's report of its scheduler gone: the connection closed
    ("ConnectionPool closing."), or no answer at its address ("Timed out trying to connect to
    <address>"), not a trial's own OSError."""
    if config.backend != "dask":
        return False
    from distributed.comm import CommClosedError

    address = (config.dask_address or "").split("://")[-1]
    return isinstance(error, CommClosedError) or bool(address) and address in str(error)


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
            try:
                for result in parallel(joblib.delayed(_in_worker)(fn, *item) for item in items):
                    tracker.update()
                    yield result
            except _lost_worker_errors(config) as error:
                where = f" of the Dask cluster at {config.dask_address!r}" if config.backend == "dask" else ""
                first_line = (str(error).splitlines() or [""])[0]
                raise ComputeBackendError(
                    f"a worker process{where} died during a trial ({type(error).__name__}: {first_line}): killed, or "
                    "out of memory (a smaller compute.n_jobs gives each worker more); the trials finished before are "
                    "kept: the next run resumes from them") from error
            except OSError as error:  # TimeoutError is one too
                if config.backend == "dask" and isinstance(error, TimeoutError) and "has no worker" in str(error):
                    # joblib's dask backend waits 10 s for a worker, then says to raise a timeout in
                    # code: the cluster, not the timeout, is what to look at
                    raise ComputeBackendError(
                        f"the Dask cluster at compute.dask_address {config.dask_address!r} has no worker: none was "
                        "started, or the last one died (killed, or out of memory, with no nanny to restart it). Start "
                        f"one (`dask worker {config.dask_address}`) and rerun: the trials finished before are kept, "
                        "the next run resumes from them") from error
                if _scheduler_lost(config, error):
                    raise ComputeBackendError(
                        f"the connection to the Dask scheduler at compute.dask_address {config.dask_address!r} was "
                        f"lost during the trials ({type(error).__name__}: {error}): the scheduler stopped or is out of "
                        "reach. Start it again (`dask scheduler`, then its workers) and rerun: the trials finished "
                        "before are kept, the next run resumes from them") from error
                raise
    finally:
        tracker.close()
