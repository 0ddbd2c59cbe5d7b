"""One BLAS thread for code made of many small BLAS calls, without rescanning the process.

`threadpoolctl.threadpool_limits` finds the BLAS libraries by reading the process's memory
map every time it is entered: 3.4 ms here, which was a quarter of an online figure-5 trial
(FTRL enters it for each of its 190 refits). One `ThreadpoolController`, made the first time
it is needed, does that scan once per process; its `limit` then sets and restores the
threads of the libraries it found. numpy's and scipy's BLAS are loaded before the scan (scipy's
is imported here), and no other BLAS is loaded later in this package.
"""

from __future__ import annotations

import functools

import scipy.linalg  # noqa: F401 - loads scipy's BLAS before the controller looks for it
import threadpoolctl


@functools.cache
def _controller() -> threadpoolctl.ThreadpoolController:
    return threadpoolctl.ThreadpoolController()


def one_blas_thread():
    """A context manager limiting every BLAS library of the process to one thread.

    Many small BLAS calls run faster on one thread, and on a busy 2-core machine spin-waiting
    threads made them many times slower (docs/decisions/018-threads.md)."""
    return _controller().limit(limits=1, user_api="blas")
