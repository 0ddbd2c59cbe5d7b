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
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..lp import StandardFormLP
from .feature_scaling import FeatureStandardizer
from .mom import MOM
from .mom_problem import mom_hinge_loss, operators_of_bases

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
    Z = np.asarray(Z, dtype=float)
    scaler = FeatureStandardizer().fit(Z, feature_names)
    try:
        model.fit(scaler.transform(Z), X, lp=lp, basis=basis)
    except RuntimeError as error:
        name, row, value = scaler.most_extreme_feature(Z)
        where = str(ids[row]) if ids is not None else row
        raise RuntimeError(f"MOM (lam={model.lam:g}, {model.formulation} formulation) failed on {len(Z)} observations: "
                           f"{error}. Look first at feature {name!r} of observation {where!r} "
                           f"(standardized value {value:.3g})") from error
    model.coef_ = scaler.coef_to_user(model.coef_)
    model.feature_scaling_ = scaler
    return model


def _score(model: MOM, Z, X, lp: StandardFormLP) -> tuple[float, float]:
    same = reproduced(model.decide(Z, lp).x, X)
    M = operators_of_bases(lp.A, lp.basis_from_solution(X))
    return float(same.mean()), float(mom_hinge_loss(model.coef_, M, Z).mean())


def validation_curve(model_params: dict, Z, X, lp: StandardFormLP, lambdas: Sequence[float],
                     n_folds: int = 4, seed: int = 0, feature_names=None) -> pd.DataFrame:
    """One row per lambda: mean and standard deviation over folds of the held-out reproduced
    share, mean held-out hinge, total fit seconds, and `chosen` (exactly one True)."""
    lambdas = np.asarray(lambdas, dtype=float)  # the grid comes from the parameters (inverse.tuning.lambdas)
    Z, X = np.asarray(Z, dtype=float), np.asarray(X, dtype=float)
    rows = []
    for lam in lambdas:
        shares, hinges, seconds = [], [], 0.0
        for train, held_out in kfold_indices(len(Z), n_folds, seed):
            started = time.perf_counter()
            model = fit_standardized(MOM(**{**model_params, "lam": float(lam)}), Z[train], X[train], lp.subset(train),
                                     feature_names=feature_names)
            seconds += time.perf_counter() - started
            share, hinge = _score(model, Z[held_out], X[held_out], lp.subset(held_out))
            shares.append(share), hinges.append(hinge)
        rows.append(dict(lam=float(lam), reproduced_share=float(np.mean(shares)),
                         reproduced_share_std=float(np.std(shares)), heldout_hinge=float(np.mean(hinges)),
                         fit_seconds=seconds, n_folds=n_folds, seed=seed))
    curve = pd.DataFrame(rows)
    best = curve.assign(order=np.arange(len(curve))).sort_values(
        ["reproduced_share", "heldout_hinge", "order"], ascending=[False, True, True]).index[0]
    curve["chosen"] = curve.index == best
    return curve
