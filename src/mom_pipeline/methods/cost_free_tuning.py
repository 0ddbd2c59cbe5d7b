"""Choosing MOM's lambda from observed decisions alone (inverse LP: no costs to score with).

K-fold validation over the observations, seeded: for every lambda and fold, MOM is fitted on
the other folds (features standardized inside the fit, `feature_scaling`) and scored on the
held-out fold by what x* alone gives:

* reproduced share: the fraction of held-out observations whose decision, re-optimized with
  the predicted costs, equals the observed one (the criterion);
* held-out MOM hinge: the mean MOM loss of the held-out observations at the bases completed
  from their x* (`lp.basis_from_solution`), the tie-break (lower is better).

The chosen lambda has the highest mean reproduced share; ties go to the lower held-out hinge,
then to the earlier lambda of the grid. The model is then refitted on every observation.

With the dual formulation and n_jobs above 1, folds large enough to pay for it
(`solvers.policy.tuning_fold_threads`) are fitted at once, one thread each: every fold's fit is
the same as one after the other, bit for bit.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from ..blas_threads import one_blas_thread
from ..lp import SampleError, StandardFormLP
from ..solvers.policy import tuning_fold_threads
from .feature_scaling import FeatureStandardizer
from .mom import MOM
from .mom_dual import threads_of
from .mom_dual_problem import most_free_reduced_costs
from .mom_problem import mom_hinge_loss, operators_of_bases

log = logging.getLogger(__name__)

# A held-out decision is reproduced when no entry differs by more than this times max(1, |x|_inf).
REPRODUCED_TOL = 1e-7


def kfold_indices(n_samples: int, n_folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train_idx, val_idx) for each of n_folds folds of a seeded permutation (sorted indices)."""
    if not 2 <= n_folds <= n_samples:
        raise ValueError(f"n_folds must be between 2 and the number of observations ({n_samples}); got {n_folds}")
    folds = np.array_split(np.random.default_rng(seed).permutation(n_samples), n_folds)
    return [(np.sort(np.concatenate(folds[:k] + folds[k + 1:])), np.sort(folds[k])) for k in range(n_folds)]


def reproduced(X_hat, X) -> np.ndarray:
    """(T,) True where the decision X_hat[t] equals the observed X[t] (up to REPRODUCED_TOL)."""
    X = np.asarray(X, dtype=float)
    scale = np.maximum(1.0, np.abs(X).max(axis=1))
    return np.abs(np.asarray(X_hat, dtype=float) - X).max(axis=1) <= REPRODUCED_TOL * scale


def fit_standardized(model: MOM, Z, X, lp: StandardFormLP, basis=None, feature_names=None, ids=None) -> MOM:
    """Fit `model` on standardized features; its coef_ is then in the user's units.

    A solver failure is re-raised naming the most extreme standardized feature and observation.
    """
    return _fit_standardized([model], Z, feature_names, ids,
                             lambda Z_std: model.fit(Z_std, X, lp=lp, basis=basis))[0]


def fit_standardized_grid(models: list[MOM], Z, X, lp: StandardFormLP, basis=None, feature_names=None,
                          ids=None) -> list[MOM]:
    """`fit_standardized` for models that differ only in lam, as one `MOM.fit_many` (the
    scaling is the same for all: one set of operators, warm starts along the lambda path)."""
    return _fit_standardized(models, Z, feature_names, ids,
                             lambda Z_std: MOM.fit_many(models, Z_std, X, lp=lp, basis=basis))


def _fit_standardized(models: list[MOM], Z, feature_names, ids, fit) -> list[MOM]:
    """fit(standardized Z) fits `models`; their coef_ are then mapped back to the user's units."""
    Z = np.asarray(Z, dtype=float)
    scaler = FeatureStandardizer().fit(Z, feature_names)
    try:
        fit(scaler.transform(Z))
    except RuntimeError as error:
        name, row, value = scaler.most_extreme_feature(Z)
        where = str(ids[row]) if ids is not None else row
        lams = ", ".join(f"{model.lam:g}" for model in models)
        raise RuntimeError(f"MOM (lam={lams}, {models[0].formulation} formulation) failed on {len(Z)} observations: "
                           f"{error}. Look first at feature {name!r} of observation {where!r} "
                           f"(standardized value {value:.3g})") from error
    for model in models:
        model.coef_ = scaler.coef_to_user(model.coef_)
        model.feature_scaling_ = scaler
    return models


def _score(model: MOM, Z, X, lp: StandardFormLP) -> tuple[float, float]:
    same = reproduced(model.decide(Z, lp).x, X)
    M = operators_of_bases(lp.A, lp.basis_from_solution(X))
    return float(same.mean()), float(mom_hinge_loss(model.coef_, M, Z).mean())


def fold_threads(model_params: dict, Z: np.ndarray, X: np.ndarray, lp: StandardFormLP,
                 folds: list[tuple[np.ndarray, np.ndarray]]) -> int:
    """How many folds `validation_curve` fits at once (`policy.tuning_fold_threads`): 1 unless the
    model is the dual formulation with n_jobs above 1 and a fold is large enough."""
    probe = MOM(**model_params)
    if probe.formulation != "dual":
        return 1
    m, n = lp.m, lp.n
    smallest = min(train.size for train, _ in folds)
    q = most_free_reduced_costs(X, m)
    return tuning_fold_threads(threads_of(probe.n_jobs), len(folds), smallest, n - m, q, n, Z.shape[1], m)


def validation_curve(model_params: dict, Z, X, lp: StandardFormLP, lambdas: Sequence[float],
                     n_folds: int = 4, seed: int = 0, feature_names=None, ids=None) -> pd.DataFrame:
    """One row per lambda: mean and standard deviation over folds of the held-out reproduced
    share, mean held-out hinge, the seconds of all the fits (every lambda and fold: the lambdas
    of a fold are fitted together, so they have no seconds of their own; the sum of the folds'
    seconds, also when folds are fitted at once), and `chosen` (exactly one True). `ids` name the
    observations in errors."""
    lambdas = np.asarray(lambdas, dtype=float)  # the grid comes from the parameters (inverse.tuning.lambdas)
    Z, X = np.asarray(Z, dtype=float), np.asarray(X, dtype=float)
    shares, hinges = np.empty((len(lambdas), n_folds)), np.empty((len(lambdas), n_folds))
    folds = kfold_indices(len(Z), n_folds, seed)
    threads = fold_threads(model_params, Z, X, lp, folds)
    fold_params = model_params if threads == 1 else {**model_params, "n_jobs": None}

    def fit_fold(index: int) -> tuple[list[MOM], float]:
        # every lambda of a fold in one fit_many: the same standardized features, one set of
        # operators, each lambda warm-started from the next larger one's optimum (measured on
        # one core: 1.26x on the example, 1.09x on a T = 1000 shortest path; the same curve)
        train, _ = folds[index]
        started = time.perf_counter()
        models = fit_standardized_grid([MOM(**{**fold_params, "lam": float(lam)}) for lam in lambdas], Z[train],
                                       X[train], lp.subset(train), feature_names=feature_names)
        fold_seconds = time.perf_counter() - started
        # On a large network a fold takes minutes to hours: the log shows the tuning moving.
        log.info("lambda tuning: fold %d of %d fitted (%d observations, %d lambdas) in %.1f s", index + 1, n_folds,
                 len(train), len(lambdas), fold_seconds)
        return models, fold_seconds

    def score_fold(fold: int, models: list[MOM]) -> None:
        held_out = folds[fold][1]
        for i, model in enumerate(models):
            try:
                shares[i, fold], hinges[i, fold] = _score(model, Z[held_out], X[held_out], lp.subset(held_out))
            except SampleError as error:  # the error's sample is a position in the fold: name the observation
                row = int(held_out[error.sample])
                where = repr(str(ids[row])) if ids is not None else f"at row {row}"
                features = "" if feature_names is None else ", features " + ", ".join(
                    f"{name}={value:.6g}" for name, value in zip(feature_names, Z[row]))
                raise ValueError(f"lambda tuning (lambda {model.lam:g}, fold {fold + 1} of {n_folds}): the LP of "
                                 f"held-out observation {where} has no optimum with the fold's predicted costs: "
                                 f"{error.reason}{features}") from error

    seconds = 0.0
    if threads == 1:
        for fold in range(n_folds):
            models, fold_seconds = fit_fold(fold)
            seconds += fold_seconds
            score_fold(fold, models)
    else:
        # One BLAS thread for the whole pool: the fits' own limits are set and restored per
        # thread, and a fit ending first would otherwise give the other one a multi-threaded BLAS.
        with one_blas_thread(), ThreadPoolExecutor(threads) as pool:
            fitted = list(pool.map(fit_fold, range(n_folds)))
        for fold, (models, fold_seconds) in enumerate(fitted):  # scored here: the held-out decisions are LP solves
            seconds += fold_seconds
            score_fold(fold, models)
    rows = [dict(lam=float(lam), reproduced_share=float(shares[i].mean()), reproduced_share_std=float(shares[i].std()),
                 heldout_hinge=float(hinges[i].mean()), grid_fit_seconds=seconds, n_folds=n_folds, seed=seed)
            for i, lam in enumerate(lambdas)]
    curve = pd.DataFrame(rows)
    best = curve.assign(order=np.arange(len(curve))).sort_values(
        ["reproduced_share", "heldout_hinge", "order"], ascending=[False, True, True]).index[0]
    curve["chosen"] = curve.index == best
    return curve


def chosen_at_grid_edge(curve: pd.DataFrame, parameter: str) -> str | None:
    """Why the grid may be too narrow, or None: the chosen lambda is the grid's smallest or
    largest and reproduces strictly more held-out decisions than its neighbour, so the share
    was still rising where the grid stops (on noise-free data the smallest lambda often is).
    `parameter` names the list to extend in the message."""
    if len(curve) < 2:
        return None
    ordered = curve.sort_values("lam").reset_index(drop=True)
    at = int(np.flatnonzero(ordered["chosen"].to_numpy())[0])
    if at not in (0, len(ordered) - 1):
        return None
    neighbour = 1 if at == 0 else at - 1
    share, next_share = ordered.loc[at, "reproduced_share"], ordered.loc[neighbour, "reproduced_share"]
    if not share > next_share:  # level, lower, or the neighbour not fitted (NaN)
        return None
    side = "smallest" if at == 0 else "largest"
    return (f"the chosen lambda {ordered.loc[at, 'lam']:.3g} is the {side} of {parameter} and reproduces "
            f"{100 * share:.1f}% of the held-out decisions against {100 * next_share:.1f}% at "
            f"{ordered.loc[neighbour, 'lam']:.3g}: a {side.replace('est', 'er')} lambda may do better; extend {parameter}")

