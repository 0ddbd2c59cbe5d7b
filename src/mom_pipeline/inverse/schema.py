"""Input tables for inverse LP on your own data: learn c_hat = Theta z from observed decisions.

Each observation t has a context (features z_t), an LP over n decision variables
x = (x_0, ..., x_{n-1}) and the decision x*_t observed as optimal for it:

    x*_t  solves  min c_t'x  s.t.  A_ub x <= b_ub,  A_eq x = b_eq,  lower <= x <= upper

with unknown costs c_t: MOM learns c_hat = Theta z from (z_t, x*_t) alone, and prescribes
decisions for new contexts. Tables are CSV or parquet files read into pandas DataFrames;
every table has a column ``id``. Five tables, the last three describing the constraints:

**features** (required): one row per observation.

    id, <feature columns...>          e.g.  id, hour_sin, hour_cos, rain_mm, weekend

``id`` is unique; every other column is a numeric feature (or pick them with
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
observation, naming the file, the row and the reason, when: its id is missing, duplicated
or absent from another table; a value is NaN, infinite or not a number; an index is out of
range; a rhs is missing; its constraints are inconsistent or convert to a standard form of
another size; its decision x* is not feasible (relative tolerance 1e-7) or not a vertex of
its LP. ``on_invalid="raise"`` raises for the first invalid observation (saying how many
more there are); ``on_invalid="report"`` drops every invalid observation and lists each
once in a rejection report (columns id, file, row, reason). A problem of a table as a whole
(a missing column, an empty table, an invalid shared constraint) raises in both modes.
Row numbers in messages and in the report are 0-based positions in the table: the line of
a CSV file with a header is row + 2.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..lp import StandardFormLP
from .standard_form import OriginalConstraints, StandardFormMap

TABLES = ("features", "decisions", "constraints", "rhs", "bounds")
SHARED_ID = "*"
ID = "id"
CONSTRAINT_KINDS = ("ub", "eq")
CONSTRAINT_COLUMNS = ("id", "kind", "row", "col", "value")
RHS_COLUMNS = ("id", "kind", "row", "rhs")
BOUNDS_COLUMNS = ("id", "col", "lower", "upper")
INTERCEPT = "intercept"
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


def _require_columns(df, table: str, columns, log: IssueLog) -> None:
    if df is None or not isinstance(df, pd.DataFrame):
        log.fatal(table, f"expected a table (pandas DataFrame); got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        log.fatal(table, f"missing column(s) {missing}; the table has columns {list(df.columns)}")


def _numeric(df: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """Column as floats and a mask of cells that are present but not numbers."""
    raw = df[column]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    not_number = np.isnan(values) & raw.notna().to_numpy()
    return values, not_number


def _cell_problem(value: float, not_number: bool, raw, column: str, allow_inf: bool = False) -> str | None:
    if not_number:
        return f"value {raw!r} in column {column!r} is not a number"
    if np.isnan(value):
        return f"column {column!r} is empty (NaN)"
    if not allow_inf and np.isinf(value):
        return f"column {column!r} is infinite ({value})"
    return None


def _decision_columns(df: pd.DataFrame, log: IssueLog) -> list[str]:
    """The columns x_0..x_{n-1}, checked to be contiguous."""
    numbered = sorted((int(m.group(1)), c) for c in df.columns if (m := DECISION_PATTERN.match(str(c))))
    if not numbered:
        log.fatal("decisions", f"no decision columns x_0, x_1, ... (columns: {list(df.columns)}); "
                               "name them x_0..x_{n-1} or pass decision_columns")
    for expected, (index, column) in enumerate(numbered):
        if index != expected:
            log.fatal("decisions", f"decision column x_{expected} is missing: the columns must be x_0..x_{{n-1}} "
                                   f"(found {[c for _, c in numbered]})")
    return [c for _, c in numbered]


def read_wide_table(df, table: str, log: IssueLog, columns=None) -> tuple[list, np.ndarray, np.ndarray, list]:
    """Read a features or decisions table: one row per observation, id + numeric columns.

    Rows with a missing or duplicated id or a bad cell are rejected in `log`.

    Returns:
        ids (k valid rows), values (k, len(columns)), rows (k,) table positions, columns.
    """
    _require_columns(df, table, [ID], log)
    if len(df) == 0:
        log.fatal(table, "the table is empty (no observation)")
    if columns is None:
        columns = _decision_columns(df, log) if table == "decisions" else [c for c in df.columns if c != ID]
    columns = list(columns)
    _require_columns(df, table, columns, log)
    if not columns:
        log.fatal(table, "no value columns besides 'id'")
    ids = [normalize_id(v) for v in df[ID].tolist()]
    counts = pd.Series([i for i in ids if i is not None], dtype=object).value_counts()
    duplicated = set(counts.index[counts > 1])
    parsed = [_numeric(df, c) for c in columns]
    values = np.column_stack([p[0] for p in parsed])
    not_number = np.column_stack([p[1] for p in parsed])
    text_columns = [c for j, c in enumerate(columns) if len(df) > 1 and not_number[:, j].all()]
    if text_columns:
        log.fatal(table, f"column(s) {text_columns} hold no number: drop them, or name the numeric columns "
                         f"({'feature_columns' if table == 'features' else 'decision_columns'})")
    bad_cell = not_number | ~np.isfinite(values)
    keep = []
    reported_duplicates = set()
    for r, id in enumerate(ids):
        if id is None:
            log.reject(None, table, r, "the id is missing")
        elif id in duplicated:
            if id not in reported_duplicates:
                rows = [i for i, other in enumerate(ids) if other == id]
                log.reject(id, table, r, f"id {id!r} appears in rows {rows}: ids must be unique")
                reported_duplicates.add(id)
        elif bad_cell[r].any():
            j = int(np.flatnonzero(bad_cell[r])[0])
            log.reject(id, table, r, _cell_problem(values[r, j], not_number[r, j], df[columns[j]].iloc[r], columns[j]))
        else:
            keep.append(r)
    keep = np.asarray(keep, dtype=np.int64)
    return [ids[r] for r in keep], values[keep], keep, columns


def read_features(df, log: IssueLog, feature_columns=None, add_intercept: bool = False):
    """Features table -> (ids, Z (k, d), rows, feature names); see `read_wide_table`."""
    ids, Z, rows, names = read_wide_table(df, "features", log, feature_columns)
    if add_intercept:
        if INTERCEPT in names:
            log.fatal("features", f"add_intercept=True but the table already has a column {INTERCEPT!r}")
        Z = np.column_stack([Z, np.ones(len(Z))])
        names = names + [INTERCEPT]
    return ids, Z, rows, names


# --------------------------------------------------------------------------- long tables


def read_long_table(df, table: str, log: IssueLog, n: int) -> tuple[pd.DataFrame, bool]:
    """Read a constraints, rhs or bounds table and check every row.

    Returns:
        The valid rows with a normalized ``id`` (None for shared rows), integer ``row`` /
        ``col`` and float values, and whether the table is per observation. Invalid rows
        reject their observation, or raise when the table is shared.
    """
    columns = {"constraints": CONSTRAINT_COLUMNS, "rhs": RHS_COLUMNS, "bounds": BOUNDS_COLUMNS}[table]
    _require_columns(df, table, columns, log)
    ids = [normalize_id(v) for v in df[ID].tolist()]
    ids = [None if i == SHARED_ID else i for i in ids]
    per_obs = np.array([i is not None for i in ids], dtype=bool)
    if per_obs.any() and not per_obs.all():
        first_shared = int(np.flatnonzero(~per_obs)[0])
        log.fatal(table, "the table mixes shared rows (id '*' or empty) and per-observation rows; "
                         "use one or the other", row=first_shared)
    per_observation = bool(per_obs.any())
    problems: list[str | None] = [None] * len(df)

    def flag(mask: np.ndarray, message) -> None:
        for r in np.flatnonzero(mask):
            if problems[r] is None:
                problems[r] = message(r)

    out = pd.DataFrame({ID: ids}, index=np.arange(len(df)))
    if "kind" in columns:
        kinds = df["kind"].astype(str).str.strip().str.lower().to_numpy()
        flag(df["kind"].isna().to_numpy(), lambda r: "column 'kind' is empty (NaN)")
        flag(~np.isin(kinds, CONSTRAINT_KINDS),
             lambda r: f"kind {df['kind'].iloc[r]!r} is not one of {CONSTRAINT_KINDS}")
        out["kind"] = kinds
    for index_column, upper in (("row", None), ("col", n)):
        if index_column not in columns:
            continue
        values, not_number = _numeric(df, index_column)
        flag(df[index_column].isna().to_numpy(), lambda r, c=index_column: f"column {c!r} is empty (NaN)")
        integral = np.isfinite(values) & (values == np.round(values))
        flag(~integral, lambda r, c=index_column: f"{c} {df[c].iloc[r]!r} is not an integer index")
        in_range = integral & (values >= 0) & (values < (upper if upper is not None else np.inf))
        bound = f"[0, {upper})" if upper is not None else ">= 0"
        flag(integral & ~in_range, lambda r, c=index_column, v=values, b=bound: f"{c} {int(v[r])} is out of range {b}"
             + (f" (the decisions have {n} variables)" if c == "col" else ""))
        out[index_column] = np.where(integral, values, -1).astype(np.int64)
    for value_column in [c for c in columns if c in ("value", "rhs", "lower", "upper")]:
        values, not_number = _numeric(df, value_column)
        allow_inf = value_column in ("lower", "upper")
        bad = not_number | np.isnan(values) | (~allow_inf & np.isinf(values))
        flag(bad, lambda r, c=value_column, v=values, nn=not_number: _cell_problem(v[r], nn[r], df[c].iloc[r], c,
                                                                                    allow_inf))
        out[value_column] = values
    key = [c for c in ("kind", "row", "col") if c in columns]
    duplicated = out.duplicated(subset=[ID] + key, keep=False).to_numpy()
    flag(duplicated, lambda r: f"{'/'.join(key)} {tuple(out[key].iloc[r])} is given twice"
         + (f" for id {ids[r]!r}" if ids[r] is not None else ""))
    valid = np.ones(len(df), dtype=bool)
    for r, problem in enumerate(problems):
        if problem is None:
            continue
        if not per_observation:
            log.fatal(table, problem + " (in a shared row: every observation would be invalid)", row=r)
        log.reject(ids[r], table, r, problem)
        valid[r] = False
    return out[valid].reset_index(drop=True), per_observation


def _scatter(df: pd.DataFrame, per_obs: bool, position: dict, shape: tuple, index_columns: tuple,
             value_column: str, fill: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """An array of `shape` (with a leading T axis when per_obs) holding df[value_column] at
    the indices df[index_columns], `fill` elsewhere, and the mask of the entries given.
    Per-observation rows of ids not in `position` (rejected observations) are ignored."""
    lead = (len(position),) if per_obs else ()
    values = np.full(lead + shape, fill)
    given = np.zeros(lead + shape, dtype=bool)
    if per_obs:
        t = df[ID].map(position)
        mine = t.notna().to_numpy()
        index = (t[mine].to_numpy(dtype=np.int64),)
    else:
        mine = np.ones(len(df), dtype=bool)
        index = ()
    index += tuple(df[c].to_numpy()[mine] for c in index_columns)
    values[index] = df[value_column].to_numpy()[mine]
    given[index] = True
    return values, given


def build_constraints(tables: dict, ids: list, n: int, log: IssueLog) -> OriginalConstraints:
    """OriginalConstraints for the observations `ids` from parsed long tables.

    tables: {"constraints": (df, per_obs), "rhs": (df, per_obs), "bounds": (df, per_obs)
    (optional)} from `read_long_table`. Rows are numbered per kind; m_ub and m_eq are the
    largest row index + 1 over all observations (rows an observation does not list are
    0 = 0 or 0 <= 0). Rows with a coefficient but no rhs reject their observation (raise
    when both tables are shared).
    """
    position = {id: t for t, id in enumerate(ids)}
    cons, cons_per_obs = tables["constraints"]
    rhs, rhs_per_obs = tables["rhs"]
    arrays = {}
    for kind in CONSTRAINT_KINDS:
        part_A, part_b = cons[cons["kind"] == kind], rhs[rhs["kind"] == kind]
        rows = np.concatenate([part_A["row"].to_numpy(), part_b["row"].to_numpy()])
        m = int(rows.max()) + 1 if rows.size else 0
        A, has_coef = _scatter(part_A, cons_per_obs, position, (m, n), ("row", "col"), "value")
        b, has_rhs = _scatter(part_b, rhs_per_obs, position, (m,), ("row",), "rhs")
        missing = has_coef.any(axis=-1) & ~has_rhs  # (m,) shared, else (T, m)
        for t, row in np.argwhere(np.atleast_2d(missing)):
            reason = f"{kind} row {row} has coefficients in the constraints table but no rhs"
            if missing.ndim == 1:
                log.fatal("rhs", reason + " (shared rows: every observation would be invalid)")
            log.reject(ids[t], "rhs", None, reason)
        arrays[kind] = (A, b)
    lower, upper = np.zeros(n), np.full(n, np.inf)
    if tables.get("bounds") is not None:
        bounds, per_obs = tables["bounds"]
        lower, _ = _scatter(bounds, per_obs, position, (n,), ("col",), "lower", fill=0.0)
        upper, _ = _scatter(bounds, per_obs, position, (n,), ("col",), "upper", fill=np.inf)
    (A_ub, b_ub), (A_eq, b_eq) = arrays["ub"], arrays["eq"]
    per_sample = any(arr.ndim > ndim for arr, ndim in ((A_ub, 2), (b_ub, 1), (lower, 1)))
    return OriginalConstraints(A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, lower=lower, upper=upper,
                               n_samples=len(ids) if per_sample else None)


# --------------------------------------------------------------------------- writing


def constraints_to_tables(A_ub=None, b_ub=None, A_eq=None, b_eq=None, lower=None, upper=None, ids=None) -> dict:
    """Long tables (constraints, rhs, bounds) from arrays, shared or per observation.

    Arrays are shared (A (m, n), b (m,), lower/upper (n,)) with ids=None, or per observation
    (leading axis T) with ids the T observation ids. Only nonzero coefficients are written;
    bounds rows only for variables whose bounds are not the default [0, inf).
    """
    def rows_of(kind, A, b):
        cons, rhs = [], []
        if A is None:
            return cons, rhs
        A, b = np.asarray(A, dtype=float), np.asarray(b, dtype=float)
        if ids is None:
            A, b = A[None], b[None]
        for t in range(A.shape[0]):
            id = SHARED_ID if ids is None else ids[t]
            r, c = np.nonzero(A[t])
            cons += [(id, kind, int(i), int(j), float(A[t, i, j])) for i, j in zip(r, c)]
            rhs += [(id, kind, int(i), float(b[t, i])) for i in range(A.shape[1])]
        return cons, rhs

    cons_ub, rhs_ub = rows_of("ub", A_ub, b_ub)
    cons_eq, rhs_eq = rows_of("eq", A_eq, b_eq)
    tables = {
        "constraints": pd.DataFrame.from_records(cons_ub + cons_eq, columns=list(CONSTRAINT_COLUMNS)),
        "rhs": pd.DataFrame.from_records(rhs_ub + rhs_eq, columns=list(RHS_COLUMNS)),
    }
    bound_rows = []
    if lower is not None or upper is not None:
        n = np.shape(lower if lower is not None else upper)[-1]
        lo = np.broadcast_to(np.asarray(lower if lower is not None else np.zeros(n), dtype=float),
                             np.shape(lower if lower is not None else upper))
        hi = np.broadcast_to(np.asarray(upper if upper is not None else np.full(n, np.inf), dtype=float), lo.shape)
        lo2, hi2 = (lo[None], hi[None]) if ids is None else (lo, hi)
        for t in range(lo2.shape[0]):
            id = SHARED_ID if ids is None else ids[t]
            for j in np.flatnonzero((lo2[t] != 0) | (hi2[t] != np.inf)):
                bound_rows.append((id, int(j), float(lo2[t, j]), float(hi2[t, j])))
    tables["bounds"] = pd.DataFrame.from_records(bound_rows, columns=list(BOUNDS_COLUMNS))
    return tables


def write_example_tables(tables: dict, directory, fmt: str = "csv") -> dict:
    """Write tables {name: DataFrame} to directory/<name>.csv (or .parquet); returns the paths.

    CSV keeps -inf / inf bounds as the text ``-inf`` / ``inf``, which pandas reads back as floats.
    """
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"fmt must be 'csv' or 'parquet'; got {fmt!r}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, table in tables.items():
        path = directory / f"{name}.{fmt}"
        if fmt == "csv":
            table.to_csv(path, index=False)
        else:
            table.to_parquet(path, index=False)
        paths[name] = path
    return paths
