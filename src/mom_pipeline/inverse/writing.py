"""Write constraints as the input tables (layout in `mom_pipeline.inverse.schema`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .schema import BOUNDS_COLUMNS, CONSTRAINT_COLUMNS, RHS_COLUMNS, SHARED_ID

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
