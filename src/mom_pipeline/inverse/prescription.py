"""Prescribe decisions for new contexts with a fitted cost model, in the user's variables.

A model fitted by the inverse pipeline carries `FittedOn` (``model.fitted_on_``): the
fingerprint (content hash) of the problem it was fitted on, of the LP its coefficients
refer to, and the feature columns in their order. Before prescribing, the new contexts
and constraints are checked against it, so that a stale model, reordered or renamed
columns, or changed constraints are errors rather than wrong decisions.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..lp import SampleError
from .schema import ID, INTERCEPT, REJECTION_COLUMNS, InverseInputError, InverseProblem, normalize_id
from .tables import robust_ranges
from .validation import validate_inverse_problem


def content_hash(*parts) -> str:
    """A hash of numbers, strings and arrays (dtype, shape and bytes), 16 hex digits."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray) and part.dtype != object:
            array = np.ascontiguousarray(part)
            digest.update(repr((array.dtype.str, array.shape)).encode())
            digest.update(array.tobytes())
        else:
            digest.update(repr(part.tolist() if isinstance(part, np.ndarray) else part).encode())
        digest.update(b"\x00")
    return digest.hexdigest()[:16]


def _constraint_arrays(problem: InverseProblem) -> list:
    c = problem.constraints
    return [c.A_ub, c.b_ub, c.A_eq, c.b_eq, c.lower, c.upper]


def problem_fingerprint(problem: InverseProblem) -> str:
    """The content hash of a validated problem: observations, features, decisions and LPs."""
    return content_hash(list(problem.ids), problem.feature_names, problem.Z, problem.decision_names,
                        problem.X_orig, *_constraint_arrays(problem), problem.lp.A, problem.lp.b)


def lp_fingerprint(problem: InverseProblem) -> str:
    """The hash of the LP that a cost model's coefficients refer to. Always the standard-form
    columns (which original variable, slack or split each one is); for constraints shared
    by all observations, the constraints themselves too. Per-observation constraints differ
    between training and new observations by design: only their standard form must agree."""
    std_map = problem.std_map
    structure = (std_map.D, std_map.column_names, problem.lp.m, problem.lp.n)
    if problem.constraints.shared:
        return content_hash("shared", *structure, *_constraint_arrays(problem), problem.lp.A, problem.lp.b)
    return content_hash("per observation", *structure)


@dataclass(frozen=True)
class FittedOn:
    """What an inverse model was fitted on (kept as ``model.fitted_on_``)."""

    problem: str  # problem_fingerprint of the training problem
    lp: str  # lp_fingerprint of the training problem
    feature_columns: tuple  # the features table's columns, in the model's order
    all_columns: bool  # every column but id was a feature: another column in new contexts is unknown
    add_intercept: bool
    n_variables: int
    standard_form: tuple  # (rows, columns) of the training LP's standard form
    # New contexts further than outlier_threshold robust deviations from the training features'
    # (center, scale) (`tables.robust_ranges`, in feature_columns' order) are refused.
    feature_ranges: tuple | None = None
    outlier_threshold: float | None = None


def record_fit(model, problem: InverseProblem, *, add_intercept: bool, all_columns: bool,
               outlier_threshold: float | None = None):
    """Stamp a model fitted on `problem` with `FittedOn` (returns the model)."""
    columns = problem.feature_names[:-1] if add_intercept else problem.feature_names
    center, scale = robust_ranges(problem.Z[:, :len(columns)])
    model.fitted_on_ = FittedOn(problem=problem_fingerprint(problem), lp=lp_fingerprint(problem),
                                feature_columns=tuple(columns), all_columns=all_columns, add_intercept=add_intercept,
                                n_variables=len(problem.decision_names), standard_form=(problem.lp.m, problem.lp.n),
                                feature_ranges=(tuple(center.tolist()), tuple(scale.tolist())),
                                outlier_threshold=outlier_threshold)
    return model


def fitted_on(model, problem: InverseProblem) -> FittedOn:
    """The model's `FittedOn`, checked to belong to `problem` (the training problem saved
    with it); InverseInputError otherwise."""
    record = getattr(model, "fitted_on_", None)
    if not isinstance(record, FittedOn):
        raise InverseInputError(None, "the model does not say which problem it was fitted on (it was saved by an "
                                      "older version or outside the inverse pipeline): rerun the inverse pipeline")
    current = problem_fingerprint(problem)
    if record.problem != current:
        raise InverseInputError(None, f"the model was fitted on another problem (fingerprint {record.problem}) than "
                                      f"the newest validated problem ({current}): the last inverse run "
                                      "probably stopped after validating its inputs; rerun the inverse pipeline, or "
                                      "prescribe with this model and the problem of its own run: kedro run "
                                      "--pipelines=prescribe --load-versions=<namespace>.problem:<the model's "
                                      "version, its folder under data/06_models/<namespace>/model.pkl/>")
    return record


def new_context_columns(new_contexts: pd.DataFrame, record: FittedOn, file: str | None) -> list:
    """The feature columns of `new_contexts`, matched to the model's by name (any order).
    A missing column, or a column the model does not know, is an InverseInputError."""
    if not isinstance(new_contexts, pd.DataFrame) or ID not in new_contexts.columns:
        raise InverseInputError(file, f"expected a table with a column {ID!r} and the feature columns "
                                      f"{list(record.feature_columns)}")
    present = [str(c) for c in new_contexts.columns if c != ID]
    missing = [c for c in record.feature_columns if c not in present]
    unknown = [c for c in present if c not in record.feature_columns] if record.all_columns else []
    if INTERCEPT in unknown and record.add_intercept:
        unknown.remove(INTERCEPT)  # reported by the reader: add_intercept adds it
    if missing or unknown:
        parts = [f"missing column(s) {missing}" if missing else "", f"unknown column(s) {unknown}" if unknown else ""]
        raise InverseInputError(file, f"{' and '.join(p for p in parts if p)}: the model was fitted with the "
                                      f"features {list(record.feature_columns)} (matched by name, in any order)")
    return list(record.feature_columns)


def prescription_problem(model, problem: InverseProblem, new_contexts: pd.DataFrame, constraints=None, rhs=None,
                         bounds=None, *, drop_implied: bool = False, file_names: dict | None = None) -> InverseProblem:
    """The new contexts as a validated problem in the LP the model was fitted on.

    `problem` is the training problem saved with the model; `file_names` name the files in
    messages (``features``: the new contexts' file). Raises InverseInputError when the model
    belongs to another problem, a feature column is missing or unknown, a new context is
    invalid, or the constraints are not the ones the model was fitted on.
    """
    return validate_new_contexts(model, problem, new_contexts, constraints, rhs, bounds, drop_implied=drop_implied,
                                 file_names=file_names, on_invalid="raise")[0]


def validate_new_contexts(model, problem: InverseProblem, new_contexts: pd.DataFrame, constraints=None, rhs=None,
                          bounds=None, *, drop_implied: bool = False, file_names: dict | None = None,
                          on_invalid: str = "raise") -> tuple[InverseProblem, pd.DataFrame]:
    """`prescription_problem` and the report of the invalid contexts; with on_invalid="report"
    those are left out of the problem instead of stopping (problems of a whole table, of the
    model or of the LP still raise)."""
    files = dict(file_names or {})
    record = fitted_on(model, problem)
    columns = new_context_columns(new_contexts, record, files.get("features", "features"))
    new_problem, report = validate_inverse_problem(
        new_contexts, None, constraints, rhs, bounds, feature_columns=columns, n_variables=record.n_variables,
        add_intercept=record.add_intercept, on_invalid=on_invalid, drop_implied=drop_implied, file_names=files,
        outlier_threshold=record.outlier_threshold, feature_ranges=record.feature_ranges)
    if lp_fingerprint(new_problem) != record.lp:
        names = ", ".join(files.get(t, t) for t in ("constraints", "rhs", "bounds"))
        raise InverseInputError(files.get("constraints", "constraints"), "the model was fitted on another LP: the "
                                f"constraints ({names}) changed since the inverse run (standard form now "
                                f"{new_problem.lp.m} x {new_problem.lp.n}, when fitted {record.standard_form[0]} x "
                                f"{record.standard_form[1]}); rerun the inverse pipeline")
    return new_problem, report


ON_FAILED_CONTEXT = ("raise", "report")
# HiGHS's statuses of an LP that has no optimum, said in the user's terms.
_LP_STATUS_MEANING = {
    "Unbounded": "the LP is unbounded with the predicted costs (a feasible direction lowers the cost without limit)",
    "Infeasible": "the LP is infeasible (no decision satisfies this context's constraints)",
    "Primal infeasible or unbounded": "the LP is infeasible or unbounded with the predicted costs",
}


def _most_unusual_feature(Z_row: np.ndarray, feature_names, record: FittedOn | None) -> str:
    """Which feature of one context lies furthest from the training features' robust range."""
    columns = list(feature_names)
    values = np.asarray(Z_row[:len(record.feature_columns)] if record else Z_row, dtype=float)
    if record is None or record.feature_ranges is None:
        j = int(np.argmax(np.abs(values)))
        return f"its largest feature is {columns[j]!r} = {values[j]:.6g}"
    center, scale = (np.asarray(r, dtype=float) for r in record.feature_ranges)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        deviations = np.where(scale > 0, np.abs(values - center) / scale, np.where(values == center, 0.0, np.inf))
    j = int(np.argmax(deviations))
    return (f"its feature furthest from the training range is {columns[j]!r} = {values[j]:.6g} "
            f"({deviations[j]:.3g} robust standard deviations from the training median {center[j]:.6g})")


def _failure_reason(error: SampleError | None, costs: np.ndarray) -> str:
    if error is None:
        return "a predicted cost is not finite (the features overflow the model's costs)"
    status = getattr(error, "status", None)
    meaning = _LP_STATUS_MEANING.get(status)
    if meaning is None:
        largest = float(np.abs(costs).max())
        meaning = (f"the LP solver returned no optimum (HiGHS status: {status or error.reason}; largest predicted "
                   f"cost {largest:.3g})" if status else f"no optimal basis: {error.reason}")
    return meaning


def decide_each(model, problem: InverseProblem) -> tuple[np.ndarray, dict]:
    """The model's decisions in standard form (T, n'; NaN rows for failed contexts) and
    {position: reason} for the contexts whose LP has no optimum with the predicted costs
    (not finite, unbounded, infeasible, or not solved): one such context does not stop the
    others. The reason names the context's feature furthest from the training range."""
    with np.errstate(over="ignore", invalid="ignore"):
        costs = np.asarray(model.predict_cost(problem.Z), dtype=float)
    T = len(costs)
    X = np.full((T, problem.lp.n), np.nan)
    errors: dict = {int(t): None for t in np.flatnonzero(~np.isfinite(costs).all(axis=1))}
    remaining = [t for t in range(T) if t not in errors]
    while remaining:  # a failed sample stops HiGHS's batch: the others are solved again without it
        index = np.asarray(remaining)
        try:
            X[index] = problem.lp.subset(index).solve(costs[index], need_basis=False).x
            break
        except SampleError as error:
            failed = int(index[error.sample])
            errors[failed] = error
            remaining.remove(failed)
    record = getattr(model, "fitted_on_", None)
    record = record if isinstance(record, FittedOn) else None
    return X, {t: f"{_failure_reason(error, costs[t])}; {_most_unusual_feature(problem.Z[t], problem.feature_names, record)}"
               for t, error in sorted(errors.items())}


def prescribe(model, problem: InverseProblem, file: str | None = None) -> pd.DataFrame:
    """Decisions (id, x_0..x_{n-1}) for the observations of `problem` (decisions not needed).

    Solves the standard-form LPs with the costs `model.predict_cost(problem.Z)` (a fitted
    `mom_pipeline.methods.base.CostModel` trained in the same standard form) and maps the
    solutions back to the original variables. A context whose LP has no optimum is an
    InverseInputError naming `file` (the contexts' file), the id, the reason and the feature.
    """
    table, failures = prescribe_each(model, problem, file)
    raise_first_failure(failures, file)
    return table


def raise_first_failure(failures: list, file: str | None, hint: str = "") -> None:
    """InverseInputError for the first of `prescribe_each`'s failures, if any (`hint`: what to do)."""
    if failures:
        first = failures[0]
        more = f" ({len(failures) - 1} more context(s) failed)" if len(failures) > 1 else ""
        raise InverseInputError(file, first["reason"] + more + hint, id=first["id"])


def prescribe_each(model, problem: InverseProblem, file: str | None = None) -> tuple[pd.DataFrame, list]:
    """`prescribe` for every context that has an optimum: the decisions table (a row per
    context; empty decisions where none) and a failure record (id, file, row, reason) per
    context without one (`decide_each`)."""
    X_std, reasons = decide_each(model, problem)
    ok = np.setdiff1d(np.arange(problem.n_samples), list(reasons))
    X = np.full((problem.n_samples, len(problem.decision_names)), np.nan)
    if ok.size:
        X[ok] = problem.std_map.subset(ok).to_original(X_std[ok])
    failures = [dict(id=str(problem.ids[t]), file=file, row=None, reason=reason) for t, reason in reasons.items()]
    return problem.decisions_table(X), failures


def with_every_context(prescriptions: pd.DataFrame, new_contexts: pd.DataFrame, failures: list) -> tuple:
    """Prescriptions with a row, in file order, for every id of `new_contexts` (empty decisions
    for those that have none), and the failure report (REJECTION_COLUMNS, the file's rows)."""
    ids = [normalize_id(v) for v in new_contexts[ID].tolist()]
    file_row = {}
    for r, id in enumerate(ids):
        file_row.setdefault(id, r)
    order = [id for id in dict.fromkeys(ids) if id is not None]
    table = prescriptions.set_index(ID).reindex(pd.Index(order, name=ID)).reset_index()
    report = pd.DataFrame.from_records(
        [(f["id"], f["file"], f["row"] if f["row"] is not None else file_row.get(f["id"]), f["reason"])
         for f in failures], columns=list(REJECTION_COLUMNS))
    report["row"] = report["row"].astype("Int64")
    return table, report
