"""Inverse-LP nodes: thin wrappers over mom_pipeline.inverse and mom_pipeline.methods."""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd

from mom_pipeline.inverse import InverseProblem, make_example_dataset, prescribe, validate_inverse_problem
from mom_pipeline.inverse.prescription import prescription_problem, record_fit
from mom_pipeline.methods.base import CostModel
from mom_pipeline.methods.mom import MOM

from .datasets import file_names

log = logging.getLogger(__name__)

TABLES = ("features", "decisions", "constraints", "rhs", "bounds")
OPTIONS = ("feature_columns", "decision_columns", "add_intercept", "on_invalid", "drop_implied")


def _options(params: dict) -> dict:
    return {k: params[k] for k in OPTIONS if k in params and params[k] is not None}


def make_example(example: dict) -> tuple[pd.DataFrame, ...]:
    """The shipped example: observed routes on a grid road network with their contexts."""
    tables = make_example_dataset(**example)
    return tuple(tables[name] for name in (*TABLES, "new_contexts", "new_travel_times"))


def validate_inputs(features: pd.DataFrame, decisions: pd.DataFrame, constraints: pd.DataFrame, rhs: pd.DataFrame,
                    bounds: pd.DataFrame, inverse: dict) -> tuple[InverseProblem, pd.DataFrame]:
    """Validated standard-form problem and the rejection report (id, file, row, reason)."""
    files = file_names(features=features, decisions=decisions, constraints=constraints, rhs=rhs, bounds=bounds)
    problem, rejections = validate_inverse_problem(
        features, decisions, constraints, rhs, bounds if len(bounds) else None, file_names=files,
        **_options(inverse))
    if len(rejections):
        log.warning("inverse: %d observations rejected (see the rejection report); %d kept", len(rejections),
                    problem.n_samples)
    log.info("inverse: %d observations, %d features, standard form %d x %d", problem.n_samples, problem.Z.shape[1],
             problem.lp.m, problem.lp.n)
    return problem, rejections


def train_inverse_model(problem: InverseProblem, inverse: dict) -> CostModel:
    """MOM from the observed decisions alone (basis or dual formulation)."""
    model = MOM(**inverse.get("model", {}))
    started = time.perf_counter()
    model.fit(problem.Z, problem.X_std, lp=problem.lp, basis=problem.basis)
    log.info("inverse: MOM (%s formulation) fitted on %d observations in %.2f s", model.formulation,
             problem.n_samples, time.perf_counter() - started)
    return record_fit(model, problem, add_intercept=bool(inverse.get("add_intercept")),
                      all_columns=inverse.get("feature_columns") is None)


def coefficients_table(model: CostModel, problem: InverseProblem) -> pd.DataFrame:
    """Theta (standard-form variables x features) as a table."""
    return pd.DataFrame(model.coef_, columns=list(problem.feature_names),
                        index=pd.Index([f"std_{j}" for j in range(model.coef_.shape[0])], name="variable")).reset_index()


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
                  bounds: pd.DataFrame, problem: InverseProblem, inverse: dict) -> pd.DataFrame:
    """Decisions for new contexts (same constraint tables, shared or with rows for the new ids),
    refused when the model was fitted on another problem or LP, or the columns do not match."""
    files = file_names(features=new_contexts, constraints=constraints, rhs=rhs, bounds=bounds)
    new_problem = prescription_problem(model, problem, new_contexts, constraints, rhs, bounds if len(bounds) else None,
                                       drop_implied=bool(inverse.get("drop_implied")), file_names=files)
    return prescribe(model, new_problem)
