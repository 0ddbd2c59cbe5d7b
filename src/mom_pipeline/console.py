"""What the console shows: log filters for third-party messages (settings.py attaches them: Kedro's
logging config refuses the `()` factory key that dictConfig needs for a filter), and one line for
an error of the user's input tables."""

from __future__ import annotations

import logging
import os
import sys


def _not_yet_written(record: logging.LogRecord) -> str | None:
    """The dataset's name when `record` is kedro-viz's "could not be previewed" for a dataset that
    no run has written yet (no version saved, or an input file not there), else None."""
    if not record.name.startswith("kedro_viz") or "could not be previewed" not in str(record.msg):
        return None
    args = record.args if isinstance(record.args, tuple) else ()
    if len(args) < 3:
        return None
    name, kind, error = args[:3]
    # the OS's "No such file or directory", or an input table's own "no such file; it must hold ..."
    missing = kind == "VersionNotFoundError" or "no such file" in str(error).lower()
    return str(name) if missing else None


class NotYetWrittenPreviews(logging.Filter):
    """`kedro viz build --include-previews` warns, with the whole error, for every dataset no run
    has written yet (after a smoke run: most of the inverse and benchmark pipelines' datasets).
    One line says so for all of them, at the first, at INFO (an expected state after a partial
    run, not a fault); other preview failures pass as kedro-viz's warnings."""

    def __init__(self, name: str = ""):
        super().__init__(name)
        self.suppressed = 0

    def filter(self, record: logging.LogRecord) -> bool:
        name = _not_yet_written(record)
        if name is None:
            return True
        self.suppressed += 1
        if self.suppressed > 1:
            return False
        record.msg = "no preview for datasets that no run has written yet (the first: %r; the others not listed)"
        record.args = (name,)
        record.levelno, record.levelname = logging.INFO, logging.getLevelName(logging.INFO)
        return True


def _input_error(error: BaseException | None) -> BaseException | None:
    """The invalid-input error (`inverse.schema.InverseInputError`) that `error` is or was
    raised from (Kedro wraps a dataset's error in its own DatasetError), else None."""
    from mom_pipeline.inverse.schema import InverseInputError

    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, InverseInputError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def short_input_errors(previous=sys.excepthook):
    """An excepthook that prints an error of the user's input tables as the one line of its
    message, which names the file and what is wrong (the traceback, 95 lines through Kedro's
    dataset wrapper, says nothing more to a user); `MOM_TRACEBACK=1` prints it. Any other
    error goes to `previous`."""
    def excepthook(kind, error, traceback):
        cause = _input_error(error)
        if cause is None or os.environ.get("MOM_TRACEBACK") == "1":
            return previous(kind, error, traceback)
        print(f"Error: {cause} (MOM_TRACEBACK=1 shows the traceback)", file=sys.stderr)

    return excepthook
