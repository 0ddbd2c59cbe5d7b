"""Validate the user's tables into an InverseProblem, with a rejection report.

The table layout is documented in `mom_pipeline.inverse.schema`. Checks, in order (each
invalid observation appears once in the report, with its first problem and the others):

1. per table: missing id, duplicated id, NaN / infinite / non-numeric value, bad kind,
   index out of range, a coefficient given twice (`tables.read_wide_table`,
   `tables.read_long_table`); a feature value far outside its column's robust range, a
   typo such as 1e12 (`tables.outlier_reasons`);
2. ids present in one table but not in another;
3. rows with coefficients but no rhs (`schema.build_constraints`);
4. constraints that cannot be put in standard form (inconsistent equalities, empty bounds,
   a standard form of another size than most observations');
5. x* not feasible for its LP: |A_eq x - b_eq|, (A_ub x - b_ub)+, bound violations above
   `tol` * max(1, |x|_inf, |b|_inf);
6. x* not a vertex: in standard form the columns of its support are linearly dependent
   (`mom_pipeline.lp.basis_from_solution`).

Problems of a whole table (missing column, a column name given twice, empty table, invalid
shared constraints) raise InverseInputError in both modes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..lp import BasisError, StandardFormLP, basis_from_solution
from .schema import CONSTRAINT_COLUMNS, ID, RHS_COLUMNS, SHARED_ID, InverseInputError, InverseProblem, IssueLog, normalize_id
from .tables import OUTLIER_THRESHOLD, build_constraints, read_features, read_long_table, read_wide_table
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


def _check_ids_everywhere(raw: dict, required: list, log: IssueLog, universe: set | None = None) -> None:
    """Reject every id that is absent from a table where each observation needs rows.
    `universe`: the ids that matter (None: every id of every table)."""
    present = {table: set(ids) for table, ids in raw.items()}
    order = [i for i in dict.fromkeys(i for ids in raw.values() for i in ids) if universe is None or i in universe]
    for id in order:
        for table in required:
            if id not in present[table]:
                found = [log.file(t) for t in required if id in present[t]]
                log.reject(id, table, None, f"no row for id {id!r} in {log.file(table)} (it is in {', '.join(found)})")


# --------------------------------------------------------------------------- the observations


@dataclass
class Observations:
    """The candidate observations, one row each in the order of the features table.

    ``table`` columns: id; features_row / decisions_row: positions in the parsed Z / X;
    file_row: the decisions table row (for messages); reason: why it was rejected (None
    while accepted). Each validation step looks at the accepted rows and rejects some; the
    IssueLog keeps every problem of every id for the report.
    """

    table: pd.DataFrame
    log: IssueLog

    def accepted(self) -> np.ndarray:
        """Positions (0..k-1) of the observations not rejected so far."""
        return np.flatnonzero(self.table["reason"].isna().to_numpy())

    def ids(self, positions) -> list:
        return self.table[ID].to_numpy()[positions].tolist()

    def sync(self) -> None:
        """Take over the rejections recorded directly in the log (by the table readers)."""
        for k in self.accepted():
            entries = self.log.by_id.get(self.table.at[k, ID])
            if entries:
                self.table.at[k, "reason"] = entries[0][2]

    def reject(self, table: str, reasons: dict, rows: dict | None = None) -> None:
        """Reject {position: reason}, reported against `table` (rows: {position: file row})."""
        for k, reason in sorted(reasons.items()):
            self.log.reject(self.table.at[k, ID], table, None if rows is None else rows.get(k), reason)
            self.table.at[k, "reason"] = reason

    def require_some(self) -> np.ndarray:
        """The accepted positions; raise when none is left."""
        accepted = self.accepted()
        if not accepted.size:
            _raise_nothing_left(self.log)
        return accepted


@dataclass
class ConvertedLPs:
    """The user's constraints and their standard form for the observations `positions`."""

    positions: np.ndarray
    original: OriginalConstraints
    lp: StandardFormLP
    std_map: object

    def restrict(self, positions: np.ndarray) -> "ConvertedLPs":
        """The same for a subset of the positions (in increasing order)."""
        index = np.searchsorted(self.positions, positions)
        return ConvertedLPs(positions, self.original if self.original.shared else self.original.subset(index),
                            self.lp.subset(index), self.std_map.subset(index))


def _observation_table(f_ids: list, d_ids: list | None, d_rows: np.ndarray, log: IssueLog) -> Observations:
    """Every id of the features table that parsed; rejected already when the log says so."""
    decision_row = {id: k for k, id in enumerate(d_ids or [])}
    table = pd.DataFrame({ID: f_ids, "features_row": np.arange(len(f_ids))})
    table["decisions_row"] = [decision_row.get(id, -1) for id in f_ids]
    table["file_row"] = [int(d_rows[k]) if k >= 0 else -1 for k in table["decisions_row"]]
    table["reason"] = pd.Series([None] * len(f_ids), dtype=object)
    observations = Observations(table, log)
    observations.sync()
    return observations


def _reject_missing_rhs(observations: Observations, parsed: dict, n: int) -> OriginalConstraints:
    """Step 3: assemble the constraints of the accepted observations (rows with a
    coefficient but no rhs reject theirs, in the log)."""
    accepted = observations.require_some()
    original = build_constraints(parsed, observations.ids(accepted), n, observations.log)
    observations.sync()
    return original


def _convert_to_standard_form(observations: Observations, original: OriginalConstraints, positions: np.ndarray,
                              drop_implied: bool) -> ConvertedLPs:
    """Step 4: the standard forms; observations whose constraints cannot be converted (or
    convert to another size than most) are rejected."""
    accepted = observations.require_some()
    keep = np.searchsorted(positions, accepted)
    original = original if original.shared else original.subset(keep)
    try:
        reduced = drop_implied_constraints(original) if drop_implied else original
        A, b, std_map, converted, failures = convert_samples(reduced, n_samples=accepted.size)
    except StandardFormError as exc:  # shared constraints: nothing can be converted
        observations.log.fatal("constraints", f"the constraints cannot be put in standard form: {exc.reason}")
    observations.reject("constraints", {int(accepted[t]): f"the constraints cannot be put in standard form: {reason}"
                                        for t, reason in failures.items()})
    original = original if original.shared else original.subset(converted)
    return ConvertedLPs(accepted[converted], original, StandardFormLP(A=A, b=b), std_map)


def _reject_bad_decisions(observations: Observations, lps: ConvertedLPs, X: np.ndarray,
                          tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Steps 5 and 6: decisions that violate their constraints, or are feasible but not a
    vertex (rejected together, in table order). Returns the standard-form decisions and
    the bases of the observations still accepted."""
    accepted = observations.require_some()
    lps = lps.restrict(accepted)
    X_accepted = X[observations.table["decisions_row"].to_numpy()[accepted]]
    failures = infeasibility_reasons(lps.original, X_accepted, tol)
    X_std = _clean_support(lps.std_map.to_standard(X_accepted))
    feasible = np.setdiff1d(np.arange(accepted.size), list(failures))
    basis = np.zeros((accepted.size, lps.lp.m), dtype=np.int64)
    if feasible.size:
        basis[feasible], not_vertex = vertex_bases(lps.lp.subset(feasible), X_std[feasible])
        failures.update({int(feasible[t]): reason for t, reason in not_vertex.items()})
    file_rows = observations.table["file_row"].to_numpy()
    observations.reject("decisions", {int(accepted[t]): reason for t, reason in failures.items()},
                        {int(accepted[t]): int(file_rows[accepted[t]]) for t in failures})
    good = np.setdiff1d(np.arange(accepted.size), list(failures))
    return X_std[good], basis[good]


def _raise_or_report(log: IssueLog, on_invalid: str) -> pd.DataFrame:
    report = log.report()
    if on_invalid == "raise" and len(report):
        first = log.first_error()
        more = len(report) - 1
        if more:
            first = InverseInputError(first.file, first.reason + f" ({more} more invalid observation(s); "
                                      "on_invalid='report' drops them and lists each in a report)", first.row, first.id)
        raise first
    return report


def validate_inverse_problem(features, decisions=None, constraints=None, rhs=None, bounds=None, *,
                             feature_columns=None, decision_columns=None, n_variables: int | None = None,
                             add_intercept: bool = False, on_invalid: str = "raise", tol: float = FEASIBILITY_TOL,
                             drop_implied: bool = False, outlier_threshold: float | None = OUTLIER_THRESHOLD,
                             feature_ranges=None, file_names: dict | None = None) -> tuple[InverseProblem, pd.DataFrame]:
    """Validate the tables (see `mom_pipeline.inverse.schema`) into an InverseProblem.

    Args:
        features, decisions, constraints, rhs, bounds: DataFrames (bounds optional;
            decisions None for prescription inputs, then give n_variables; ids in the
            constraint tables that are not in features are then ignored).
        feature_columns / decision_columns: the value columns (defaults: every non-id
            column / x_0..x_{n-1}).
        add_intercept: append a constant feature 1.
        on_invalid: "raise" (InverseInputError for the first invalid observation) or
            "report" (drop the invalid observations, each listed in the report).
        tol: relative feasibility tolerance.
        drop_implied: leave out of the standard form the inequality rows and upper bounds
            that the other constraints imply (`presolve.drop_implied_constraints`: fewer
            degenerate bases; costs small LPs, T times more for per-observation constraints).
        outlier_threshold: reject an observation with a feature value further than this
            many robust standard deviations from its column's median (`tables.robust_ranges`;
            None: no check); feature_ranges: (center, scale) per feature column to measure
            against instead of this table's own (prescription: the training features').
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
    # Step 1: every table on its own.
    f_ids, Z, _, feature_names = read_features(features, log, feature_columns, add_intercept, outlier_threshold,
                                               feature_ranges)
    if decisions is not None:
        d_ids, X, d_rows, decision_names = read_wide_table(decisions, "decisions", log, decision_columns)
        if n_variables is not None and n_variables != len(decision_names):
            log.fatal("decisions", f"{len(decision_names)} decision columns but n_variables = {n_variables}")
    elif n_variables is None:
        raise InverseInputError(None, "without a decisions table, give n_variables (the number of LP variables)")
    else:
        d_ids, X, d_rows, decision_names = None, None, np.zeros(0, dtype=np.int64), [f"x_{j}" for j in range(n_variables)]
    n = len(decision_names)
    if constraints is None and rhs is None and bounds is None:
        log.fatal("constraints", "no constraints given (constraints, rhs and bounds are all missing)")
    empty = {"constraints": pd.DataFrame(columns=list(CONSTRAINT_COLUMNS)),
             "rhs": pd.DataFrame(columns=list(RHS_COLUMNS))}
    given = {"constraints": constraints, "rhs": rhs, "bounds": bounds}
    parsed = {name: read_long_table(given[name] if given[name] is not None else empty[name], name, log, n)
              for name in ("constraints", "rhs")}
    if bounds is not None:
        parsed["bounds"] = read_long_table(bounds, "bounds", log, n)

    # Step 2: ids present in one table but missing from another that needs them.
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
    _check_ids_everywhere(raw, required, log, universe=None if decisions is not None else set(raw["features"]))

    observations = _observation_table(f_ids, d_ids, d_rows, log)
    candidates = observations.require_some()
    original = _reject_missing_rhs(observations, parsed, n)  # step 3
    lps = _convert_to_standard_form(observations, original, candidates, drop_implied)  # step 4
    X_std = basis = None
    if X is not None:
        X_std, basis = _reject_bad_decisions(observations, lps, X, tol)  # steps 5 and 6
    accepted = observations.require_some()
    report = _raise_or_report(log, on_invalid)
    lps = lps.restrict(accepted)
    rows = observations.table.loc[accepted]
    problem = InverseProblem(
        ids=np.asarray(rows[ID].tolist(), dtype=object), feature_names=tuple(feature_names),
        Z=Z[rows["features_row"].to_numpy()], decision_names=tuple(decision_names),
        X_orig=None if X is None else X[rows["decisions_row"].to_numpy()], constraints=lps.original, lp=lps.lp,
        X_std=X_std, std_map=lps.std_map, basis=basis,
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
