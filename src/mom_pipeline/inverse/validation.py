"""Validate the user's tables into an InverseProblem, with a rejection report.

The table layout is documented in `mom_pipeline.inverse.schema`. Checks, in order (each
invalid observation appears once in the report, with its first problem and the others):

1. per table: missing id, duplicated id, NaN / infinite / non-numeric value, bad kind,
   index out of range, a coefficient given twice (`schema.read_wide_table`,
   `schema.read_long_table`);
2. ids present in one table but not in another;
3. rows with coefficients but no rhs (`schema.build_constraints`);
4. constraints that cannot be put in standard form (inconsistent equalities, empty bounds,
   a standard form of another size than most observations');
5. x* not feasible for its LP: |A_eq x - b_eq|, (A_ub x - b_ub)+, bound violations above
   `tol` * max(1, |x|_inf, |b|_inf);
6. x* not a vertex: in standard form the columns of its support are linearly dependent
   (`mom_pipeline.lp.basis_from_solution`).

Problems of a whole table (missing column, empty table, invalid shared constraints) raise
InverseInputError in both modes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..lp import BasisError, StandardFormLP, basis_from_solution
from .schema import CONSTRAINT_COLUMNS, ID, RHS_COLUMNS, SHARED_ID, InverseInputError, InverseProblem, IssueLog, normalize_id
from .tables import build_constraints, read_features, read_long_table, read_wide_table
from .presolve import drop_implied_constraints
from .standard_form import OriginalConstraints, StandardFormError, convert_samples

ON_INVALID = ("raise", "report")
FEASIBILITY_TOL = 1e-7
# Standard-form entries below this times max(1, |x'|_inf) are zeros of the support (the
# same threshold as lp.basis_from_solution); they come from rounding in b - A x.
SUPPORT_TOL = 1e-9


def infeasibility_reasons(constraints: OriginalConstraints, X: np.ndarray, tol: float = FEASIBILITY_TOL) -> dict:
    """{sample: reason} for every x_t (rows of X, (T, n)) that violates its constraints.

    The tolerance is relative to max(1, |x_t|_inf, |b_t|_inf); the reason names the worst
    violated row or bound.
    """
    T, n = X.shape
    stack = lambda arr, shape: np.broadcast_to(arr, shape)  # noqa: E731
    A_ub = stack(constraints.A_ub, (T,) + constraints.A_ub.shape[-2:])
    b_ub = stack(constraints.b_ub, (T,) + constraints.b_ub.shape[-1:])
    A_eq = stack(constraints.A_eq, (T,) + constraints.A_eq.shape[-2:])
    b_eq = stack(constraints.b_eq, (T,) + constraints.b_eq.shape[-1:])
    lower = stack(constraints.lower, (T, n))
    upper = stack(constraints.upper, (T, n))
    scale = np.maximum(1.0, np.abs(X).max(axis=1))
    for b in (b_ub, b_eq):
        if b.shape[1]:
            scale = np.maximum(scale, np.abs(b).max(axis=1))
    violations = {  # name -> (T, k) amounts, and how to describe entry k
        "ub": (np.maximum(np.einsum("tmn,tn->tm", A_ub, X) - b_ub, 0.0), "ub row {k}: A x - b = {v:.3g} > 0"),
        "eq": (np.abs(np.einsum("tmn,tn->tm", A_eq, X) - b_eq), "eq row {k}: |A x - b| = {v:.3g}"),
        "lower": (np.where(np.isfinite(lower), lower - X, 0.0), "x_{k} = {x:.6g} is below its lower bound {lo:.6g}"),
        "upper": (np.where(np.isfinite(upper), X - upper, 0.0), "x_{k} = {x:.6g} is above its upper bound {hi:.6g}"),
    }
    reasons = {}
    for name, (amount, template) in violations.items():
        if amount.shape[1] == 0:
            continue
        worst = amount.argmax(axis=1)
        value = amount[np.arange(T), worst]
        for t in np.flatnonzero(value > tol * scale):
            if t in reasons:
                continue
            k = int(worst[t])
            detail = template.format(k=k, v=value[t], x=X[t, k] if name in ("lower", "upper") else 0.0,
                                     lo=lower[t, k] if name == "lower" else 0.0,
                                     hi=upper[t, k] if name == "upper" else 0.0)
            reasons[int(t)] = f"the decision is not feasible: {detail}"
    return reasons


def _clean_support(X_std: np.ndarray) -> np.ndarray:
    """Zero the rounding noise of standard-form decisions (feasible within tolerance)."""
    scale = np.maximum(1.0, np.abs(X_std).max(axis=1, keepdims=True))
    X_std = np.where(np.abs(X_std) <= SUPPORT_TOL * scale, 0.0, X_std)
    return np.maximum(X_std, 0.0)


def vertex_bases(lp: StandardFormLP, X_std: np.ndarray) -> tuple[np.ndarray, dict]:
    """Bases (T, m') of the decisions that are vertices, and {sample: reason} for the others.

    One batched `basis_from_solution` call; when it fails, the samples are checked one by
    one to name every bad one (input conversion, not a hot path).
    """
    try:
        return basis_from_solution(lp.A, lp.b, X_std), {}
    except BasisError:
        pass
    T = X_std.shape[0]
    basis = np.zeros((T, lp.m), dtype=np.int64)
    failures = {}
    for t in range(T):
        A_t = lp.A if lp.A.ndim == 2 else lp.A[t]
        b_t = lp.b if lp.b.ndim == 1 else lp.b[t]
        try:
            basis[t] = basis_from_solution(A_t, b_t, X_std[t : t + 1])[0]
        except BasisError as exc:
            failures[t] = f"the decision is not a vertex of its LP in standard form: {exc.reason}"
    return basis, failures


def _raw_ids(df) -> list:
    """The ids of a table as written (shared markers and missing ids left out)."""
    if df is None or ID not in df.columns:
        return []
    return [i for i in (normalize_id(v) for v in df[ID].tolist()) if i is not None and i != SHARED_ID]


def _check_ids_everywhere(raw: dict, required: list, log: IssueLog) -> None:
    """Reject every id that is absent from a table where each observation needs rows."""
    present = {table: set(ids) for table, ids in raw.items()}
    order = list(dict.fromkeys(i for ids in raw.values() for i in ids))
    for id in order:
        for table in required:
            if id not in present[table]:
                found = [log.file(t) for t in required if id in present[t]]
                log.reject(id, table, None, f"no row for id {id!r} in {log.file(table)} (it is in {', '.join(found)})")


def validate_inverse_problem(features, decisions=None, constraints=None, rhs=None, bounds=None, *,
                             feature_columns=None, decision_columns=None, n_variables: int | None = None,
                             add_intercept: bool = False, on_invalid: str = "raise", tol: float = FEASIBILITY_TOL,
                             drop_implied: bool = False,
                             file_names: dict | None = None) -> tuple[InverseProblem, pd.DataFrame]:
    """Validate the tables (see `mom_pipeline.inverse.schema`) into an InverseProblem.

    Args:
        features, decisions, constraints, rhs, bounds: DataFrames (bounds optional;
            decisions None for prescription inputs, then give n_variables).
        feature_columns / decision_columns: the value columns (defaults: every non-id
            column / x_0..x_{n-1}).
        add_intercept: append a constant feature 1.
        on_invalid: "raise" (InverseInputError for the first invalid observation) or
            "report" (drop the invalid observations, each listed in the report).
        tol: relative feasibility tolerance.
        drop_implied: leave out of the standard form the inequality rows and upper bounds
            that the other constraints imply (`presolve.drop_implied_constraints`: fewer
            degenerate bases; costs small LPs, T times more for per-observation constraints).
        file_names: names shown in messages and in the report, e.g. {"features":
            "data/01_raw/features.csv"}; defaults to the table names.
    Returns:
        (InverseProblem of the valid observations in the order of the features table,
         rejection report DataFrame with columns id, file, row, reason; empty when clean).
    Raises:
        InverseInputError naming the file, the row and/or id and the reason.
    """
    if on_invalid not in ON_INVALID:
        raise ValueError(f"on_invalid must be one of {ON_INVALID}; got {on_invalid!r}")
    log = IssueLog(file_names)
    f_ids, Z_valid, _, feature_names = read_features(features, log, feature_columns, add_intercept)
    if decisions is not None:
        d_ids, X_valid, d_rows, decision_names = read_wide_table(decisions, "decisions", log, decision_columns)
        if n_variables is not None and n_variables != len(decision_names):
            log.fatal("decisions", f"{len(decision_names)} decision columns but n_variables = {n_variables}")
        n = len(decision_names)
    else:
        if n_variables is None:
            raise InverseInputError(None, "without a decisions table, give n_variables (the number of LP variables)")
        n, d_ids, d_rows = int(n_variables), [], np.zeros(0, dtype=np.int64)
        decision_names = [f"x_{j}" for j in range(n)]
        X_valid = np.zeros((0, n))
    if constraints is None and rhs is None and bounds is None:
        log.fatal("constraints", "no constraints given (constraints, rhs and bounds are all missing)")
    empty = {"constraints": pd.DataFrame(columns=list(CONSTRAINT_COLUMNS)),
             "rhs": pd.DataFrame(columns=list(RHS_COLUMNS))}
    given = {"constraints": constraints, "rhs": rhs, "bounds": bounds}
    parsed = {name: read_long_table(given[name] if given[name] is not None else empty[name], name, log, n)
              for name in ("constraints", "rhs")}
    if bounds is not None:
        parsed["bounds"] = read_long_table(bounds, "bounds", log, n)

    raw = {"features": _raw_ids(features)}
    required = ["features"]
    if decisions is not None:
        raw["decisions"] = _raw_ids(decisions)
        required.append("decisions")
    for name, (_, per_obs) in parsed.items():
        if per_obs:
            raw[name] = _raw_ids(given[name])
            if name != "bounds":  # no bounds row means the default bounds
                required.append(name)
    _check_ids_everywhere(raw, required, log)

    # The candidates: valid in every table so far, in the order of the features table.
    feature_row = {id: k for k, id in enumerate(f_ids)}
    decision_row = {id: k for k, id in enumerate(d_ids)}
    ids = [id for id in f_ids if not log.rejected(id)]
    if not ids:
        _raise_nothing_left(log)
    Z = Z_valid[[feature_row[i] for i in ids]]
    X = X_valid[[decision_row[i] for i in ids]] if decisions is not None else None
    table_row = {id: int(d_rows[decision_row[id]]) for id in ids} if decisions is not None else {}

    original = build_constraints(parsed, ids, n, log)
    keep = np.flatnonzero([not log.rejected(i) for i in ids])  # positions in `ids` still valid
    if not keep.size:
        _raise_nothing_left(log)
    original = original if original.shared else original.subset(keep)
    try:
        reduced = drop_implied_constraints(original) if drop_implied else original
        A, b, std_map, converted, failures = convert_samples(reduced, n_samples=keep.size)
    except StandardFormError as exc:  # shared constraints: nothing can be converted
        log.fatal("constraints", f"the constraints cannot be put in standard form: {exc.reason}")
    for t, reason in failures.items():
        log.reject(ids[keep[t]], "constraints", None, f"the constraints cannot be put in standard form: {reason}")
    keep = keep[converted]
    if not keep.size:
        _raise_nothing_left(log)
    original = original if original.shared else original.subset(converted)
    lp = StandardFormLP(A=A, b=b)

    X_std, basis = None, None
    if X is not None:
        failures = infeasibility_reasons(original, X[keep], tol)
        X_std = _clean_support(std_map.to_standard(X[keep]))
        feasible = np.setdiff1d(np.arange(keep.size), list(failures))
        basis = np.zeros((keep.size, lp.m), dtype=np.int64)
        if feasible.size:
            basis[feasible], not_vertex = vertex_bases(lp.subset(feasible), X_std[feasible])
            failures.update({int(feasible[t]): reason for t, reason in not_vertex.items()})
        for t in sorted(failures):
            log.reject(ids[keep[t]], "decisions", table_row[ids[keep[t]]], failures[t])
        if failures:
            good = np.setdiff1d(np.arange(keep.size), list(failures))
            if not good.size:
                _raise_nothing_left(log)
            keep, X_std, basis = keep[good], X_std[good], basis[good]
            original = original if original.shared else original.subset(good)
            lp, std_map = lp.subset(good), std_map.subset(good)

    report = log.report()
    if on_invalid == "raise" and len(report):
        first = log.first_error()
        more = len(report) - 1
        if more:
            first = InverseInputError(first.file, first.reason + f" ({more} more invalid observation(s); "
                                      "on_invalid='report' drops them and lists each in a report)", first.row, first.id)
        raise first
    problem = InverseProblem(
        ids=np.asarray([ids[k] for k in keep], dtype=object), feature_names=tuple(feature_names), Z=Z[keep],
        decision_names=tuple(decision_names), X_orig=None if X is None else X[keep], constraints=original, lp=lp,
        X_std=X_std, std_map=std_map, basis=basis,
    )
    return problem, report


def _raise_nothing_left(log: IssueLog):
    report = log.report()
    first = log.first_error()
    raise InverseInputError(
        first.file if first else None,
        f"no valid observation left ({len(report)} rejected); first problem: {first.reason if first else 'none'}",
        row=first.row if first else None, id=first.id if first else None,
    )


def load_inverse_problem(tables: dict, **options) -> tuple[InverseProblem, pd.DataFrame]:
    """`validate_inverse_problem` on a dict of tables {"features": df, "decisions": df,
    "constraints": df, "rhs": df, "bounds": df}; other keys (e.g. "new_contexts") are ignored."""
    names = ("features", "decisions", "constraints", "rhs", "bounds")
    return validate_inverse_problem(**{k: tables[k] for k in names if k in tables}, **options)
