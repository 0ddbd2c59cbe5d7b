"""Keep freed memory in the process for reuse: glibc's malloc settings for numpy's temporaries.

The solvers allocate the same large temporaries at every Newton step (the block method's
batched QR factors and products: arrays of 0.2-4 MB at T = 1,000). With glibc's defaults, a
freed block above the mmap threshold goes back to the kernel, and so does the top of the heap
beyond twice that threshold, so the next step gets fresh pages and the kernel zeroes every one
of them on first touch. Measured on the dual formulation's lambda grid (paper's shortest path,
T = 1,000, `benchmarks/page_faults.py`): about 900,000 page faults and 13.2 s by default, 7,000
faults and 9.8 s with the settings below, the coefficients identical bit for bit
(docs/decisions/013-malloc-settings.md).

`keep_freed_memory` sets, once per process:
* M_MMAP_THRESHOLD = 32 MB (glibc's largest): blocks below it come from the heap, not from fresh
  mappings (glibc's own dynamic threshold moves up to that value too, but only after a freed
  mapping shows it the size, and trims the heap again at twice its current value);
* M_TRIM_THRESHOLD = 256 MB: up to that much free memory at the top of the heap stays mapped.
A process therefore keeps at most about 256 MB of freed memory per malloc arena. Nothing
numerical depends on it. Importing the package does not call it: a process-wide setting is the
caller's choice. A Kedro run calls it when its pipeline starts (`hooks.ProcessSettingsHooks`)
and in every loky or Dask worker before a trial (`experiments.compute`); a script or notebook
calls it itself. It does nothing outside glibc, and is switched off by the environment
variable MOM_PIPELINE_MALLOC=default (any value other than 'default' or 'package' stops the
call with an error naming the variable).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 * 2**20
TRIM_THRESHOLD_BYTES = 256 * 2**20
OPT_OUT = "MOM_PIPELINE_MALLOC"

_applied: bool | None = None


def glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (on Linux), else None (musl has no mallopt thresholds)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version, libc.mallopt
    except (OSError, AttributeError):
        return None
    return libc


def keep_freed_memory() -> bool:
    """Apply the malloc settings above (once per process); True when they are in effect."""
    global _applied
    if _applied is not None:
        return _applied
    choice = os.environ.get(OPT_OUT, "").strip().lower()
    if choice not in ("", "package", "default"):
        # "off", "0" or "false" would otherwise leave the settings on without a word.
        raise ValueError(f"environment variable {OPT_OUT}={os.environ[OPT_OUT]!r}: use 'default' (glibc's own "
                         f"settings) or 'package' (this package's, as when it is unset)")
    libc = None if choice == "default" else glibc()
    _applied = False
    if libc is None:
        return _applied
    mallopt = libc.mallopt
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _applied = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
    return _applied
