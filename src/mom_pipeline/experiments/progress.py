"""Progress bars on long loops (tqdm), quiet when stderr is not a terminal unless forced."""

from __future__ import annotations

import os
import sys

from tqdm.auto import tqdm


def progress(iterable, desc: str = "", total: int | None = None):
    """Wrap `iterable` in a tqdm bar; MOM_PROGRESS=0 disables, =1 forces bars."""
    setting = os.environ.get("MOM_PROGRESS", "")
    disable = setting == "0" or (setting != "1" and not sys.stderr.isatty())
    return tqdm(iterable, desc=desc, total=total, disable=disable, leave=False)
