"""Progress of long loops, reported by the main process only (workers stay silent).

On a terminal: one tqdm bar with an ETA. Off a terminal (CI, nohup, a log file): a log line
per finished trial with the elapsed time and an ETA, for the loops that fan trials out
(`compute.map_trials` / `imap_trials`); the cheap loops (generation, evaluation) log only
their summary line."""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import time
from collections.abc import Iterable, Iterator

from tqdm.auto import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

log = logging.getLogger(__name__)


def in_worker() -> bool:
    """True in a child process (a loky or dask worker): such processes never report progress."""
    return multiprocessing.parent_process() is not None


def progress_enabled() -> bool:
    """Bars on a terminal; MOM_PROGRESS=0 disables them, MOM_PROGRESS=1 forces them."""
    if in_worker():
        return False
    setting = os.environ.get("MOM_PROGRESS", "")
    return setting == "1" or (setting != "0" and sys.stderr.isatty())


def format_seconds(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60:d}:{rest % 60:02d}"


class TrialProgress:
    """Counts finished trials: a tqdm bar on a terminal, else (when `log_each`) one log line
    per trial: `<desc>: trial 3/12 done, 0:41 elapsed, ETA 2:03`."""

    def __init__(self, total: int, desc: str = "", log_each: bool = True):
        self.total, self.desc, self.done = total, desc, 0
        self.started = time.perf_counter()
        self.bar = tqdm(total=total, desc=desc, leave=False, unit="trial") if progress_enabled() else None
        self.log_each = log_each and self.bar is None and not in_worker()
        # While the bar is shown, console log lines are written through tqdm (above the bar)
        # instead of over it.
        self._redirect = logging_redirect_tqdm() if self.bar is not None else None
        if self._redirect is not None:
            self._redirect.__enter__()

    def eta(self) -> float:
        elapsed = time.perf_counter() - self.started
        return elapsed / self.done * (self.total - self.done) if self.done else float("nan")

    def update(self) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update()
        elif self.log_each:
            log.info("%s: trial %d/%d done, %s elapsed, ETA %s", self.desc, self.done, self.total,
                     format_seconds(time.perf_counter() - self.started), format_seconds(self.eta()))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self._redirect.__exit__(None, None, None)
            self.bar = self._redirect = None


def progress(iterable: Iterable, desc: str = "", total: int | None = None, log_each: bool = False) -> Iterator:
    """Yield from `iterable`, counting items as finished when the next one is asked for."""
    count = total if total is not None else (len(iterable) if hasattr(iterable, "__len__") else 0)
    tracker = TrialProgress(count, desc, log_each=log_each)
    try:
        for item in iterable:
            yield item
            tracker.update()
    finally:
        tracker.close()
