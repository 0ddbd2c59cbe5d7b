"""Progress bars on long loops (tqdm), quiet when stderr is not a terminal unless forced."""

from __future__ import annotations

import os
import sys

from tqdm.auto import tqdm


def progress_enabled() -> bool:
    """Bars on a terminal; MOM_PROGRESS=0 disables them, MOM_PROGRESS=1 forces them."""
    setting = os.environ.get("MOM_PROGRESS", "")
    return setting == "1" or (setting != "0" and sys.stderr.isatty())


def progress(iterable, desc: str = "", total: int | None = None):
    """Wrap `iterable` in a tqdm bar when `progress_enabled()`."""
    return tqdm(iterable, desc=desc, total=total, disable=not progress_enabled(), leave=False)
