"""Inverse-LP nodes: thin wrappers over mom_pipeline.inverse and mom_pipeline.methods."""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from mom_pipeline.inverse import (
    InverseProblem,
    make_example_dataset,
    prescribe,
    validate_inverse_problem,
)
from mom_pipeline.inverse.coefficients import user_coefficients
from mom_pipeline.inverse.prescription import (
    prescribe_each,
    problem_fingerprint,
    raise_first_failure,
    record_fit,
    validate_new_contexts,
    with_every_context,
)
from mom_pipeline.methods.base import CostModel
from mom_pipeline.methods.cost_free_tuning import chosen_at_grid_edge, fit_standardized, validation_curve
from mom_pipeline.methods.feature_scaling import FeatureScaleError, FeatureStandardizer
from mom_pipeline.methods.mom import MOM, negligible_costs
from mom_pipeline.methods.mom_dual import check_dual_formulation_fits
from mom_pipeline.reporting.validation_curve import validation_curve_figure
from mom_pipeline.solvers.policy import DualFormulationTooLarge

from .datasets import file_names
from .params import InverseExampleParams, InverseParams

log = logging.getLogger(__name__)


class DegenerateFitError(ValueError):
    """The chosen fit cannot decide anything: it reproduces no held-out decision, or its
    predicted costs are zero to round-off."""

TABLES = ("features", "decisions", "constraints", "rhs", "bounds")
# The column of lambda_validation that names the problem it was scored on (`problem_fingerprint`).
PROBLEM_COLUMN = "problem_fingerprint"


def make_example(example: InverseExampleParams) -> tuple[pd.DataFrame, ...]:
    """The shipped example: observed routes on a grid road network with their contexts."""
    tables = make_example_dataset(**example.model_dump())
    return tuple(tables[name] for name in (*TABLES, "new_contexts", "new_travel_times"))


def validate_inputs(features: pd.DataFrame, decisions: pd.DataFrame, constraints: pd.DataFrame, rhs: pd.DataFrame,
                    bounds: pd.DataFrame, inverse: InverseParams) -> tuple[InverseProblem, pd.DataFrame]:
    """Validated standard-form problem and the rejection report (id, file, row, reason)."""
    files = file_names(features=features, decisions=decisions, constraints=constraints, rhs=rhs, bounds=bounds)
    problem, rejections = validate_inverse_problem(
        features, decisions, constraints, rhs, bounds if len(bounds) else None, file_names=files,
        **inverse.table_options())
    try:
        # A column the fit cannot use (constant besides the intercept) stops the run here,
        # before the tuning's fits, naming the file.
        FeatureStandardizer().fit(problem.Z, problem.feature_names)
    except FeatureScaleError as error:
        raise FeatureScaleError(f"file {files['features']!r}: {error}") from error
    if inverse.model.formulation == "dual" and problem.X_std is not None:
        # Too large for this machine's memory: stop before the tuning's fits on folds, unless
        # the LP is a network with routes, which MOM then fits by the working set over arcs.
        try:
            check_dual_formulation_fits(problem.lp.A, problem.X_std, problem.Z.shape[1], inverse.model.n_jobs)
        except DualFormulationTooLarge:
            estimator = MOM(lam=1.0, **inverse.model.estimator_params())
            if not estimator.fits_by_network(problem.lp.A, problem.X_std, problem.Z):
                raise
            log.info("inverse: too large for the dense dual formulation; a network LP with routes: MOM fits it by "
                     "the working set over arcs (solvers.network_margin)")
    if len(rejections):
        log.info("inverse: %d observations rejected, %d kept (the warning that names the rejection "
                 "report follows when it is saved)", len(rejections), problem.n_samples)
    log.info("inverse: %d observations, %d features, standard form %d x %d", problem.n_samples, problem.Z.shape[1],
             problem.lp.m, problem.lp.n)
    return problem, rejections


def tune_lambda(problem: InverseProblem, inverse: InverseParams) -> tuple[pd.DataFrame, Figure]:
    """Lambda by K-fold validation on held-out observations, scored by x* alone (the whole
    curve and a figure); with a number for model.lam, that value's held-out scores only."""
    started = time.perf_counter()
    curve = validation_curve(inverse.model.estimator_params(), problem.Z, problem.X_std, problem.lp, inverse.lambdas,
                             n_folds=inverse.tuning.n_folds, seed=inverse.tuning.seed,
                             feature_names=problem.feature_names, ids=problem.ids)
    curve[PROBLEM_COLUMN] = problem_fingerprint(problem)  # which problem the curve was scored on
    chosen = curve[curve["chosen"]].iloc[0]
    if chosen["reproduced_share"] == 0:
        which = "inverse.model.lam" if not inverse.tuned else "any lambda of inverse.tuning.lambdas"
        raise DegenerateFitError(
            f"no held-out decision is reproduced by {which} ({', '.join(f'{lam:g}' for lam in inverse.lambdas)}; "
            f"{int(chosen['n_folds'])}-fold validation on {problem.n_samples} observations): such a model's decisions "
            "are no better than arbitrary. A lambda far too large leaves Theta zero to round-off (try 1e-6 .. 100); "
            "otherwise look at the rejection report and at whether the features explain the decisions")
    log.info("inverse: lambda %s = %.3g, %.1f%% of held-out decisions reproduced (%d-fold validation, %.1f s)",
             "chosen" if inverse.tuned else "fixed", chosen["lam"], 100 * chosen["reproduced_share"],
             int(chosen["n_folds"]), time.perf_counter() - started)
    edge = chosen_at_grid_edge(curve, "inverse.tuning.lambdas") if inverse.tuned else None
    if edge:
        log.warning("inverse: %s", edge)
    return curve, validation_curve_figure(curve, fixed=not inverse.tuned)


def chosen_lambda(lambda_validation: pd.DataFrame, problem: InverseProblem, inverse: InverseParams) -> float:
    """The lambda `lambda_validation` chose, refused when that curve was not scored on this
    problem with these lambdas (a version saved by another run, e.g. with ``--from-nodes``
    after a run with other parameters)."""
    scored = getattr(lambda_validation, "columns", ())
    if PROBLEM_COLUMN not in scored or "chosen" not in scored:
        raise ValueError("lambda_validation does not say which problem it was scored on (saved by an older "
                         "version): rerun the inverse pipeline from tune_lambda")
    fingerprints = set(lambda_validation[PROBLEM_COLUMN])
    current = problem_fingerprint(problem)
    if fingerprints != {current}:
        raise ValueError(f"lambda_validation was scored on another problem (fingerprint {sorted(fingerprints)}) than "
                         f"this run's validated problem ({current}): it was saved by another run; rerun the "
                         "inverse pipeline from tune_lambda")
    lambdas = [float(lam) for lam in lambda_validation["lam"]]
    if lambdas != inverse.lambdas:
        raise ValueError(f"lambda_validation scored the lambdas {lambdas}, but this run's parameters ask for "
                         f"{inverse.lambdas}: it was saved by a run with other parameters; rerun the inverse "
                         "pipeline from tune_lambda")
    return float(lambda_validation.loc[lambda_validation["chosen"], "lam"].iloc[0])


def train_inverse_model(problem: InverseProblem, lambda_validation: pd.DataFrame, inverse: InverseParams) -> CostModel:
    """MOM from the observed decisions alone (basis or dual formulation) at the chosen lambda,
    on standardized features; Theta in the user's units. The model keeps the validation curve
    that chose its lambda (``lambda_validation_``; the lambda itself is ``model.lam``)."""
    lam = chosen_lambda(lambda_validation, problem, inverse)
    model = MOM(**inverse.model.estimator_params(), lam=lam)
    started = time.perf_counter()
    fit_standardized(model, problem.Z, problem.X_std, problem.lp, basis=problem.basis,
                     feature_names=problem.feature_names, ids=problem.ids)
    log.info("inverse: MOM (%s formulation, lambda %.3g) fitted on %d observations in %.2f s", model.formulation,
             lam, problem.n_samples, time.perf_counter() - started)
    largest = negligible_costs(model.coef_, problem.Z)  # Theta in the user's units: the costs as decided
    if largest is not None:
        raise DegenerateFitError(f"MOM at lambda {lam:g} has Theta zero to round-off (largest predicted cost "
                                 f"{largest:.3g} on the training observations): its decisions would be arbitrary; "
                                 "choose a smaller lambda (inverse.model.lam or inverse.tuning.lambdas)")
    model.lambda_validation_ = lambda_validation.reset_index(drop=True)
    return record_fit(model, problem, add_intercept=inverse.add_intercept,
                      all_columns=inverse.feature_columns is None, outlier_threshold=inverse.outlier_threshold)


def coefficients_table(model: CostModel, problem: InverseProblem) -> pd.DataFrame:
    """Theta as a table: one row per variable of the user's LP (named as in the decisions file),
    one column per feature, in the user's units; the standard form's slack costs folded in
    (`inverse.coefficients`). Where they cannot be (inequality rows that differ per observation),
    the rows are the standard-form columns, described, and a warning says why."""
    folded = user_coefficients(model.coef_, problem)
    if folded is None:
        log.warning("inverse: theta.csv is by standard-form column: the inequality rows differ between observations, "
                    "so the slacks' costs cannot be folded into one Theta of the LP's own variables")
        theta, names = model.coef_, list(problem.std_map.column_names)
    else:
        theta, names = folded
    return pd.DataFrame(theta, columns=list(problem.feature_names),
                        index=pd.Index(names, name="variable")).reset_index()


def training_report(model: CostModel, problem: InverseProblem) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Prescribed decisions for the training contexts and how often they equal the observed ones."""
    prescribed = prescribe(model, problem)
    X_hat = prescribed[list(problem.decision_names)].to_numpy(dtype=float)
    scale = np.maximum(1.0, np.abs(problem.X_orig).max(axis=1))
    same = np.abs(X_hat - problem.X_orig).max(axis=1) <= 1e-7 * scale
    prescribed.insert(1, "equals_observed", same)
    summary = pd.DataFrame([{"observations": problem.n_samples, "recovered_fraction": float(same.mean()),
                             "training_objective": float(getattr(model, "objective_", np.nan))}])
    log.info("inverse: prescribed decisions equal the observed ones for %.1f%% of the training observations",
             100 * same.mean())
    return prescribed, summary


def prescribe_new(model: CostModel, new_contexts: pd.DataFrame, constraints: pd.DataFrame, rhs: pd.DataFrame,
                  bounds: pd.DataFrame, problem: InverseProblem,
                  inverse: InverseParams) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Decisions for new contexts (same constraint tables, shared or with rows for the new ids),
    refused when the model was fitted on another problem or LP, or the columns do not match;
    and the report of the contexts without a prescription (id, file, row, reason).

    A context that is invalid or whose LP has no optimum with the predicted costs stops the run
    (inverse.prescribe_on_invalid: raise), or (report) gets a row with empty decisions and a
    line in the report, and the others are prescribed."""
    files = file_names(features=new_contexts, constraints=constraints, rhs=rhs, bounds=bounds)
    mode = inverse.prescribe_on_invalid
    new_problem, rejected = validate_new_contexts(
        model, problem, new_contexts, constraints, rhs, bounds if len(bounds) else None,
        drop_implied=inverse.drop_implied, file_names=files, on_invalid=mode)
    prescriptions, failures = prescribe_each(model, new_problem, files["features"])
    if mode == "raise":
        raise_first_failure(failures, files["features"], "; inverse.prescribe_on_invalid=report prescribes the "
                                                         "other contexts and lists each failed one")
    prescriptions, unsolved = with_every_context(prescriptions, new_contexts, failures)
    report = unsolved
    if len(rejected):  # in the file's order
        report = pd.concat([rejected, unsolved]).sort_values("row", kind="stable").reset_index(drop=True)
    if len(report):
        log.warning("prescribe: %d of %d contexts have no prescription (empty decisions in prescriptions): %s",
                    len(report), len(prescriptions),
                    "; ".join(f"{row.id!r}: {row.reason}" for row in report.head(5).itertuples()))
    return prescriptions, report
