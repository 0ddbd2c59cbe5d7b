"""Input tables for inverse LP on your own data: learn c_hat = Theta z from observed decisions.

Each observation t has a context (features z_t), an LP over n decision variables
x = (x_0, ..., x_{n-1}) and the decision x*_t observed as optimal for it:

    x*_t  solves  min c_t'x  s.t.  A_ub x <= b_ub,  A_eq x = b_eq,  lower <= x <= upper

with unknown costs c_t: MOM learns c_hat = Theta z from (z_t, x*_t) alone, and prescribes
decisions for new contexts. Tables are CSV or parquet files read into pandas DataFrames;
every table has a column ``id``. Five tables, the last three describing the constraints:

**features** (required): one row per observation.

    id, <feature columns...>          e.g.  id, hour_sin, hour_cos, rain_mm, weekend

``id`` is unique text (the pipelines read ``0000`` as ``0000``) and not ``*``, which marks
shared constraint rows; every other column is a numeric feature (or pick them with
``feature_columns``). ``add_intercept=True`` appends a constant feature ``intercept`` = 1.

**decisions** (required for training; absent for prescription): one row per observation,
the observed optimal solution in the variables of YOUR LP (not a standard form).

    id, x_0, x_1, ..., x_{n-1}

Columns ``x_0..x_{n-1}`` must all be present (or name them with ``decision_columns``, in
variable order). n is the number of variables.

**constraints**: the coefficients of the LP rows, one table row per nonzero coefficient
(coefficients not listed are 0).

    id, kind, row, col, value

``kind`` is ``ub`` for a row  sum_col value * x_col <= rhs,  or ``eq`` for  = rhs (write a
>= row as a ``ub`` row times -1). ``row`` numbers the rows of each kind from 0 (``ub`` and
``eq`` rows are numbered separately); ``col`` is the variable index 0..n-1. ``id`` is ``*``
(or empty) for rows shared by all observations, or the id of the observation they belong
to. A table is either all shared or all per observation.

**rhs**: the right-hand sides, one table row per constraint row.

    id, kind, row, rhs

Same ``id`` convention, independently of the constraints table (e.g. a shared matrix with
per-observation right-hand sides). Every row with a coefficient needs a rhs; a row an
observation does not list at all is 0 = 0 (eq) or 0 <= 0 (ub).

**bounds** (optional): one table row per variable whose bounds are not the default
0 <= x_col < inf.

    id, col, lower, upper

``lower`` may be ``-inf`` and ``upper`` may be ``inf`` (write them out: an empty cell is
an error, not "no bound"). Same ``id`` convention.

Example, shared by every observation: x_0 + x_1 <= 4, x_0 - x_2 = 1, -1 <= x_2 <= 2,
x_1 free (x_0 keeps the default x_0 >= 0):

    constraints: id,kind,row,col,value      rhs: id,kind,row,rhs    bounds: id,col,lower,upper
                 *,ub,0,0,1                      *,ub,0,4                   *,1,-inf,inf
                 *,ub,0,1,1                      *,eq,0,1                   *,2,-1,2
                 *,eq,0,0,1
                 *,eq,0,2,-1

The standard form A x = b, x >= 0 is the special case with only ``eq`` rows and no bounds
table. Any other LP is converted (`mom_pipeline.inverse.standard_form`): finite lower
bounds shifted, free variables split, upper-only variables flipped, slacks for ``ub`` rows
and finite upper bounds, dependent ``eq`` rows dropped; decisions and costs map back and
forth. Per-observation constraints must give every observation the same kinds of bounds
(finite or infinite) and equality rows of the same rank, so that the standard forms have
one size.

Validation (`mom_pipeline.inverse.validation.validate_inverse_problem`) rejects an
observation, naming the file, the row and the reason, when: its id is missing, duplicated,
``*`` or absent from another table; a value is NaN, infinite or not a number; a feature
value lies further than ``outlier_threshold`` robust standard deviations from its column's
median (a typo such as 1e12: `tables.outlier_reasons`); an index is out of range; a rhs is missing; a bounds row has lower > upper; its constraints are
inconsistent or convert to a standard form of another size; its decision x* is not
feasible (relative tolerance 1e-7) or not a vertex of its LP. ``on_invalid="raise"`` raises for the first invalid observation (saying how many
more there are); ``on_invalid="report"`` drops every invalid observation and lists each
once in a rejection report (columns id, file, row, reason). A problem of a table as a whole
(a missing column, a column name given twice, an empty table, an invalid shared
constraint) raises in both modes.
Row numbers in messages and in the report are 0-based positions in the table: the line of
a CSV file with a header is row + 2.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..lp import StandardFormLP
from ..methods.feature_scaling import INTERCEPT_NAME
from .standard_form import OriginalConstraints, StandardFormMap

TABLES = ("features", "decisions", "constraints", "rhs", "bounds")
SHARED_ID = "*"
ID = "id"
CONSTRAINT_KINDS = ("ub", "eq")
CONSTRAINT_COLUMNS = ("id", "kind", "row", "col", "value")
RHS_COLUMNS = ("id", "kind", "row", "rhs")
BOUNDS_COLUMNS = ("id", "col", "lower", "upper")
INTERCEPT = INTERCEPT_NAME  # the column `add_intercept` appends; the fit treats it as the intercept
DECISION_PATTERN = re.compile(r"^x_(\d+)$")
REJECTION_COLUMNS = ("id", "file", "row", "reason")


class InverseInputError(ValueError):
    """Invalid input tables; the message names the file, the row and/or id, and the reason."""

    def __init__(self, file: str | None, reason: str, row: int | None = None, id: str | None = None):
        self.file, self.row, self.id, self.reason = file, row, id, reason
        where = [part for part in (file and f"file {file!r}", row is not None and f"row {row}",
                                   id is not None and f"id {id!r}") if part]
        super().__init__(f"{', '.join(where)}: {reason}" if where else reason)


@dataclass(frozen=True, eq=False)
class InverseProblem:
    """Validated inverse-LP data: T observations with features, decisions and their LPs.

    ids (T,) strings; Z (T, d) features named feature_names; X_orig (T, n) observed
    decisions in the user's variables (None when no decisions were given, e.g. for
    prescription); constraints: the user's LPs (OriginalConstraints); lp: their standard
    form A x' = b, x' >= 0 (StandardFormLP, full row rank); X_std (T, n') the decisions in
    standard form; std_map converts solutions (and costs) between the two forms; basis
    (T, m') a basis of lp for every X_std (from `lp.basis_from_solution`), or None.
    """

    ids: np.ndarray
    feature_names: tuple
    Z: np.ndarray
    decision_names: tuple
    X_orig: np.ndarray | None
    constraints: OriginalConstraints
    lp: StandardFormLP
    X_std: np.ndarray | None
    std_map: StandardFormMap
    basis: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        return len(self.ids)

    def subset(self, index) -> "InverseProblem":
        """The observations `index` (an integer array)."""
        index = np.asarray(index, dtype=np.int64)
        return InverseProblem(
            ids=self.ids[index], feature_names=self.feature_names, Z=self.Z[index],
            decision_names=self.decision_names,
            X_orig=None if self.X_orig is None else self.X_orig[index],
            constraints=self.constraints if self.constraints.shared else self.constraints.subset(index),
            lp=self.lp.subset(index), X_std=None if self.X_std is None else self.X_std[index],
            std_map=self.std_map.subset(index), basis=None if self.basis is None else self.basis[index],
        )

    def decisions_table(self, X_orig) -> pd.DataFrame:
        """A decisions table (id, x_0..x_{n-1}) for decisions X_orig (T, n) of these observations."""
        X_orig = np.asarray(X_orig, dtype=float)
        table = pd.DataFrame(X_orig, columns=list(self.decision_names))
        table.insert(0, ID, self.ids)
        return table


# --------------------------------------------------------------------------- parsing helpers


def normalize_id(value) -> str | None:
    """An id as a string; None when missing. Integer-valued floats (5.0 from a CSV column
    with empty cells) become "5" so that they match the integer ids of other tables."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (float, np.floating)):
        if np.isnan(value):
            return None
        if float(value).is_integer():
            return str(int(value))
    text = str(value).strip()
    return text or None


class IssueLog:
    """Collects the problems found in the tables, per observation id.

    `reject` records a problem of one observation; `fatal` raises InverseInputError for a
    problem of a whole table (or of shared constraints). File names shown are
    `file_names[table]` (defaults: the table names).
    """

    def __init__(self, file_names: dict | None = None):
        self.file_names = {table: table for table in TABLES}
        self.file_names.update(file_names or {})
        self.by_id: dict[str, list[tuple[str, int | None, str]]] = {}
        self.without_id: list[tuple[str, int, str]] = []

    def file(self, table: str) -> str:
        return self.file_names.get(table, table)

    def reject(self, id: str | None, table: str, row: int | None, reason: str) -> None:
        entry = (self.file(table), None if row is None else int(row), reason)
        if id is None:
            self.without_id.append(entry)
        else:
            self.by_id.setdefault(id, []).append(entry)

    def fatal(self, table: str, reason: str, row: int | None = None, id: str | None = None):
        raise InverseInputError(self.file(table), reason, row=None if row is None else int(row), id=id)

    def rejected(self, id: str) -> bool:
        return id in self.by_id

    def report(self) -> pd.DataFrame:
        """One row per rejected observation: the first problem, then the others in `reason`."""
        records = []
        for id, entries in self.by_id.items():
            file, row, reason = entries[0]
            others = [f"{f}" + (f" row {r}" if r is not None else "") + f": {why}" for f, r, why in entries[1:]]
            records.append((id, file, row, "; also ".join([reason] + others)))
        records += [(None, file, row, reason) for file, row, reason in self.without_id]
        report = pd.DataFrame.from_records(records, columns=list(REJECTION_COLUMNS))
        report["row"] = report["row"].astype("Int64")
        return report

    def first_error(self) -> InverseInputError | None:
        if self.without_id:
            file, row, reason = self.without_id[0]
            return InverseInputError(file, reason, row=row)
        if self.by_id:
            id, entries = next(iter(self.by_id.items()))
            file, row, reason = entries[0]
            return InverseInputError(file, reason, row=row, id=id)
        return None
