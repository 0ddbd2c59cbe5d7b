"""Parse the input tables (layout in `mom_pipeline.inverse.schema`) into checked arrays.

Problems of one observation are recorded in an `IssueLog`; problems of a whole table raise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .schema import (
    BOUNDS_COLUMNS,
    CONSTRAINT_COLUMNS,
    CONSTRAINT_KINDS,
    DECISION_PATTERN,
    ID,
    INTERCEPT,
    RHS_COLUMNS,
    SHARED_ID,
    IssueLog,
    normalize_id,
)
from .standard_form import OriginalConstraints


# A feature value further than this many robust standard deviations (`robust_ranges`) from its
# column's median is taken for a typo and rejects its observation. Generous on purpose: a normal
# variable never gets there, a log-normal one with sigma = 1 reaches about 160 at 5 sigma, while
# a misplaced exponent (1e12) or a value in units a thousand times too small is far beyond it.
OUTLIER_THRESHOLD = 1000.0
# A feature value beyond this magnitude rejects its observation whatever outlier_threshold says:
# the costs it enters (Theta z) reach HiGHS's infinite cost (1e20) for any coefficient of order
# one, and its square, in the standardization, overflows from about 1e154 on.
FEATURE_MAGNITUDE_LIMIT = 1e20
# 1 / Phi^-1(3/4): the median absolute deviation times this estimates a normal standard deviation.
MAD_TO_SD = 1.4826


def duplicated_names(columns) -> dict:
    """{name: count} of the column names that appear more than once."""
    counts = pd.Series([str(c) for c in columns], dtype=object).value_counts()
    return {name: int(n) for name, n in counts.items() if n > 1}


def duplicated_names_message(duplicates: dict) -> str:
    names = "; ".join(f"column name {name!r} appears {n} times" for name, n in duplicates.items())
    return f"{names}: every column needs a name of its own (which of the copies is meant?)"


def _require_columns(df, table: str, columns, log: IssueLog) -> None:
    if df is None or not isinstance(df, pd.DataFrame):
        log.fatal(table, f"expected a table (pandas DataFrame); got {type(df).__name__}")
    duplicates = duplicated_names(df.columns)
    if duplicates:
        log.fatal(table, duplicated_names_message(duplicates))
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
    counts = pd.Series([i for i in ids if i not in (None, SHARED_ID)], dtype=object).value_counts()
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
        elif id == SHARED_ID:
            log.reject(None, table, r, f"id {SHARED_ID!r} marks the constraint rows shared by all observations; "
                                       "an observation needs an id of its own")
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


def robust_ranges(Z) -> tuple[np.ndarray, np.ndarray]:
    """Per column of Z (k, d): its median and a robust standard deviation, MAD_TO_SD times the
    median absolute deviation from it. When more than half the values equal the median (a
    binary column, rain that is mostly 0) that deviation is 0: the median deviation of the
    other values is used instead. A constant column has scale 0 (never flagged here)."""
    Z = np.asarray(Z, dtype=float)
    center = np.median(Z, axis=0) if len(Z) else np.zeros(Z.shape[1])
    scale = np.zeros(Z.shape[1])
    for j in range(Z.shape[1]):
        deviation = np.abs(Z[:, j] - center[j])
        mad = np.median(deviation) if deviation.size else 0.0
        if mad == 0 and (deviation > 0).any():
            mad = np.median(deviation[deviation > 0])
        scale[j] = MAD_TO_SD * mad
    return center, scale


def outlier_reasons(Z, columns, threshold: float | None, ranges=None) -> dict:
    """{row of Z: reason} for the rows with a value further than `threshold` robust standard
    deviations from its column's median (`robust_ranges` of Z itself, or `ranges` = (center,
    scale) of another table, e.g. the training features a model was fitted on)."""
    Z = np.asarray(Z, dtype=float)
    if threshold is None or not Z.size:
        return {}
    center, scale = robust_ranges(Z) if ranges is None else (np.asarray(r, dtype=float) for r in ranges)
    with np.errstate(divide="ignore", invalid="ignore"):
        deviations = np.where(scale > 0, np.abs(Z - center) / scale, 0.0)
    reasons = {}
    for r in np.flatnonzero((deviations > threshold).any(axis=1)):
        j = int(np.argmax(deviations[r]))
        reasons[int(r)] = (f"value {Z[r, j]:.6g} in column {columns[j]!r} is {deviations[r, j]:.3g} robust standard "
                           f"deviations from the column's median {center[j]:.6g} (scale {scale[j]:.3g}; more than "
                           f"{threshold:g} is taken for a typo): correct it, or set inverse.outlier_threshold higher "
                           "(null: no check) if the value is real")
    return reasons


def magnitude_reasons(Z, columns) -> dict:
    """{row of Z: reason} for the rows with a value beyond FEATURE_MAGNITUDE_LIMIT."""
    Z = np.asarray(Z, dtype=float)
    reasons = {}
    for r in np.flatnonzero((np.abs(Z) > FEATURE_MAGNITUDE_LIMIT).any(axis=1)):
        j = int(np.argmax(np.abs(Z[r])))
        reasons[int(r)] = (f"value {Z[r, j]:.6g} in column {columns[j]!r} is beyond +-{FEATURE_MAGNITUDE_LIMIT:g}: "
                           "the costs it enters would be infinite to the LP solver (a typo? or rescale the column)")
    return reasons


def read_features(df, log: IssueLog, feature_columns=None, add_intercept: bool = False,
                  outlier_threshold: float | None = OUTLIER_THRESHOLD, ranges=None):
    """Features table -> (ids, Z (k, d), rows, feature names); see `read_wide_table`. A value
    further than `outlier_threshold` robust standard deviations from its column's median
    (`outlier_reasons`: of this table, or `ranges`), or beyond FEATURE_MAGNITUDE_LIMIT
    (`magnitude_reasons`, whatever the threshold), rejects its observation in `log`."""
    ids, Z, rows, names = read_wide_table(df, "features", log, feature_columns)
    too_large = magnitude_reasons(Z, names)
    for k, reason in {**outlier_reasons(Z, names, outlier_threshold, ranges), **too_large}.items():
        log.reject(ids[k], "features", int(rows[k]), reason)
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
    if table == "bounds":
        flag(out["lower"].to_numpy() > out["upper"].to_numpy(), lambda r: f"the bounds of x_{out['col'].iloc[r]} "
             f"are empty: lower {out['lower'].iloc[r]:g} > upper {out['upper'].iloc[r]:g}")
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
