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

from .schema import ID, INTERCEPT, InverseInputError, InverseProblem
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
    files = dict(file_names or {})
    record = fitted_on(model, problem)
    columns = new_context_columns(new_contexts, record, files.get("features", "features"))
    new_problem, _ = validate_inverse_problem(new_contexts, None, constraints, rhs, bounds, feature_columns=columns,
                                              n_variables=record.n_variables, add_intercept=record.add_intercept,
                                              on_invalid="raise", drop_implied=drop_implied, file_names=files,
                                              outlier_threshold=record.outlier_threshold,
                                              feature_ranges=record.feature_ranges)
    if lp_fingerprint(new_problem) != record.lp:
        names = ", ".join(files.get(t, t) for t in ("constraints", "rhs", "bounds"))
        raise InverseInputError(files.get("constraints", "constraints"), "the model was fitted on another LP: the "
                                f"constraints ({names}) changed since the inverse run (standard form now "
                                f"{new_problem.lp.m} x {new_problem.lp.n}, when fitted {record.standard_form[0]} x "
                                f"{record.standard_form[1]}); rerun the inverse pipeline")
    return new_problem


def prescribe(model, problem: InverseProblem) -> pd.DataFrame:
    """Decisions (id, x_0..x_{n-1}) for the observations of `problem` (decisions not needed).

    Solves the standard-form LPs with the costs `model.predict_cost(problem.Z)` (a fitted
    `mom_pipeline.methods.base.CostModel` trained in the same standard form) and maps the
    solutions back to the original variables.
    """
    solution = model.decide(problem.Z, problem.lp)
    return problem.decisions_table(problem.std_map.to_original(solution.x))
