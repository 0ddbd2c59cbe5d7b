"""The dataset of the inverse pipelines' input tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from kedro.io.core import DatasetError

from mom_pipeline.datasets import AtomicCSVDataset
from mom_pipeline.inverse.schema import ID, InverseInputError
from mom_pipeline.inverse.tables import duplicated_names, duplicated_names_message

FILEPATH = "filepath"

# What each input table must hold (docs/inverse_inputs.md), for the message when its file is missing.
TABLE_CONTENTS = {
    "features": "one row per observation: id and the feature columns",
    "decisions": "one row per observation: id and the observed decision x_0..x_{n-1}",
    "constraints": "one row per nonzero coefficient of the LP's rows: id, kind, row, col, value",
    "rhs": "one row per constraint row: id, kind, row, rhs",
    "bounds": "one row per variable whose bounds are not [0, inf): id, col, lower, upper",
    "new_contexts": "one row per new context to decide for: id and the model's feature columns",
    "routes": "one row per observed route: id, origin, destination and its nodes (or arcs)",
}


class MissingInputTable(InverseInputError):
    """A required input table's file does not exist; the message names it and what it must hold."""


class InputTableDataset(AtomicCSVDataset):
    """A CSV input table (features, decisions, constraints, rhs, bounds, new contexts).

    Three differences from pandas.CSVDataset (besides saves whole or nothing, as the example
    pipeline writes these tables): the ``id`` column is read as text (``0000``
    stays ``0000`` in every file, rather than the number 0 in some); a header that names a
    column twice is refused (pandas would rename the copy ``rain_mm.1``, a feature more, and
    the copy of a decision column ``x_1.1`` would be ignored); and the loaded table
    remembers its file in ``table.attrs["filepath"]`` (relative to the working directory
    when inside it), so that validation messages and the rejection report name the file.
    A missing file is an empty table when ``optional`` (bounds: none means the default
    bounds), else a `MissingInputTable` that names the file and what it must hold.
    """

    def __init__(self, *, filepath: str, load_args: dict | None = None, optional: bool = False, **kwargs):
        self._optional = optional
        load_args = dict(load_args or {})
        dtype = load_args.get("dtype")
        if dtype is None or isinstance(dtype, dict):
            load_args["dtype"] = {ID: str, **(dtype or {})}
        super().__init__(filepath=filepath, load_args=load_args, **kwargs)

    def load(self) -> pd.DataFrame:
        shown = shown_path(self._get_load_path(), self._protocol)
        what = TABLE_CONTENTS.get(Path(str(self._get_load_path())).stem, "see docs/inverse_inputs.md")
        if not self._exists():
            if not self._optional:
                raise MissingInputTable(shown, f"no such file; it must hold {what} (docs/inverse_inputs.md)")
            table = pd.DataFrame()
            table.attrs[FILEPATH] = shown
            return table
        try:
            table = super().load()
        except DatasetError as error:
            # pandas' "No columns to parse from file", the file not named (a save cut short, a
            # wrong export): even an optional table's empty file is refused, as likely damaged
            if isinstance(error.__cause__, pd.errors.EmptyDataError):
                raise InverseInputError(shown, f"the file is empty (not even a header line); it must hold {what} "
                                               "(docs/inverse_inputs.md)") from error
            raise
        table.attrs[FILEPATH] = shown
        duplicates = duplicated_names(self._header())
        if duplicates:
            raise InverseInputError(table.attrs[FILEPATH], duplicated_names_message(duplicates))
        return table

    def _header(self) -> list[str]:
        """The column names as written in the file's first line (before pandas renames copies)."""
        path = str(self._get_load_path())
        options = {"sep": self._load_args["sep"]} if "sep" in self._load_args else {}
        if self._protocol != "file":
            path, options["storage_options"] = f"{self._protocol}://{path}", self._storage_options
        first = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False, **options)
        return first.iloc[0].tolist() if len(first) else []


def shown_path(path, protocol: str = "file") -> str:
    """A file path as a user reads it: relative to the working directory when inside it."""
    if protocol != "file":
        return f"{protocol}://{path}"
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def file_names(**tables) -> dict:
    """{table name: the file it was loaded from} for tables loaded by InputTableDataset
    (other tables keep their name)."""
    return {name: table.attrs.get(FILEPATH, name) for name, table in tables.items() if isinstance(table, pd.DataFrame)}
