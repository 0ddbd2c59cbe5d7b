"""RouteMOM on a validated RouteProblem: standardized inputs, coefficients back in the user's units,
the route a model predicts, and lambda chosen from held-out routes alone.

Standardizing (why: the QP's conditioning and the penalty's meaning should not depend on the units
a column is written in): the contexts Z with `methods.feature_scaling.FeatureStandardizer` (the
intercept as in the inverse pipeline), and, for the shared model, every arc attribute column
divided by its root mean square (not centred: a centred attribute would leave a cost shared by
every arc, which the model has no term for). The learned coefficients are mapped back so that
the costs in the user's units are the costs the fit saw:

* per-arc: c_t = Theta z_t, Theta (n, d);
* shared:  c_ta = sum_jk Theta_jk F_aj z_tk, Theta (q, d), F the arc attributes as given.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..methods.cost_free_tuning import kfold_indices
from ..methods.feature_scaling import FeatureScaleError, FeatureStandardizer
from ..methods.route_mom import UncertifiedFit
from ..solvers.network_restricted import RestrictedQPNotSolved
from .network import Network, usable_arcs
from .oracle import shortest_routes
from .routes import RouteProblem

log = logging.getLogger(__name__)

COST_MODELS = ("per_arc", "shared")


def arc_feature_matrix(network: Network, names) -> np.ndarray:
    """(n, q) arc attributes `names` of the network; a missing or zero column raises naming it."""
    names = list(names)
    missing = [c for c in names if c not in network.attributes.columns]
    if missing:
        raise FeatureScaleError(f"arc attribute(s) {missing} are not columns of network {network.name!r} "
                                f"(it has {list(network.attributes.columns)})")
    if not names:
        raise FeatureScaleError("the shared cost model needs at least one arc attribute (arc_features)")
    F = network.attributes[names].to_numpy(dtype=float)
    zero = [c for j, c in enumerate(names) if not np.any(F[:, j])]
    if zero:
        raise FeatureScaleError(f"arc attribute(s) {zero} are zero on every arc of {network.name!r}: drop them")
    return F


@dataclass(eq=False)
class RouteCostModel:
    """A fitted route cost model in the user's units: coef_ (n, d) per arc or (q, d) shared;
    the estimator (RouteMOM, fitted on standardized inputs) is kept for its solver info."""

    cost_model: str
    coef_: np.ndarray
    feature_names: tuple
    arc_feature_names: tuple
    arc_features: np.ndarray | None
    lam: float
    estimator: object
    network_name: str

    def costs(self, Z) -> np.ndarray:
        """(T, n) predicted arc costs of contexts Z (T, d) in the user's units."""
        Z = np.asarray(Z, dtype=float)
        if self.cost_model == "per_arc":
            return Z @ self.coef_.T
        return Z @ (self.arc_features @ self.coef_).T

    def routes(self, network: Network, Z, origins, destinations) -> tuple[np.ndarray, dict]:
        """((T, n) 0/1 shortest routes under the predicted costs, TNTP zones respected;
        {sample: reason} of the contexts whose predicted costs give no route (a negative cycle),
        their rows all zeros)."""
        return shortest_routes(network, self.costs(Z), origins, destinations,
                               usable_arcs(network, origins, destinations), return_failures=True)

    @property
    def objective_(self) -> float:
        return float(getattr(self.estimator, "objective_", np.nan))

    @property
    def solver_info_(self) -> dict:
        return dict(getattr(self.estimator, "solver_info_", {}) or {})


def fit_route_model(problem: RouteProblem, lam: float, *, cost_model: str = "per_arc", arc_features=(),
                    estimator_params: dict | None = None) -> RouteCostModel:
    """RouteMOM at `lam` on the problem's routes (standardized inputs; see the module docstring)."""
    from ..methods.route_mom import RouteMOM  # the estimator (lead's module)

    if cost_model not in COST_MODELS:
        raise ValueError(f"cost_model must be one of {COST_MODELS}; got {cost_model!r}")
    network = problem.network
    scaler = FeatureStandardizer().fit(problem.Z, problem.feature_names)
    F = F_std = arc_scale = None
    if cost_model == "shared":
        F = arc_feature_matrix(network, arc_features)
        arc_scale = np.sqrt(np.mean(F**2, axis=0))
        F_std = F / arc_scale
    estimator = RouteMOM(lam=float(lam), **(estimator_params or {}))
    estimator.fit(scaler.transform(problem.Z), problem.X, tails=network.tails, heads=network.heads,
                  n_nodes=network.n_nodes, arc_features=F_std, usable=problem.usable)
    coef = np.asarray(estimator.coef_, dtype=float)
    if arc_scale is not None:
        coef = coef / arc_scale[:, None]
    return RouteCostModel(cost_model=cost_model, coef_=scaler.coef_to_user(coef), feature_names=problem.feature_names,
                          arc_feature_names=tuple(arc_features) if cost_model == "shared" else (), arc_features=F,
                          lam=float(lam), estimator=estimator, network_name=network.name)


def same_routes(predicted: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """(T,) True where the predicted route uses exactly the observed arcs."""
    return ((np.asarray(predicted) > 0.5) == (np.asarray(observed) > 0.5)).all(axis=1)


def route_validation_curve(problem: RouteProblem, lambdas, *, n_folds: int = 4, seed: int = 0,
                           cost_model: str = "per_arc", arc_features=(), estimator_params: dict | None = None
                           ) -> pd.DataFrame:
    """One row per lambda: the share of held-out routes reproduced exactly (mean and standard
    deviation over the K folds of `cost_free_tuning.kfold_indices`), the mean training objective,
    the seconds of its fits, `failure` (empty, or why a fit of that lambda was not solved or not
    certified: its share is NaN and it is not chosen, with a warning; its remaining folds are
    skipped) and `chosen` (exactly one True: the highest share; ties go to the larger lambda,
    the simpler model). Raises RestrictedQPNotSolved when no lambda could be fitted."""
    folds = kfold_indices(problem.n_samples, n_folds, seed)
    lambdas = [float(lam) for lam in lambdas]
    shares = np.empty((len(lambdas), n_folds))
    objectives = np.empty((len(lambdas), n_folds))
    seconds = np.zeros(len(lambdas))
    failures = [""] * len(lambdas)
    for k, (train, held_out) in enumerate(folds):
        train_problem, test = problem.subset(train), problem.subset(held_out)
        for i, lam in enumerate(lambdas):
            if failures[i]:
                continue
            started = time.perf_counter()
            try:
                model = fit_route_model(train_problem, lam, cost_model=cost_model, arc_features=arc_features,
                                        estimator_params=estimator_params)
            except (RestrictedQPNotSolved, UncertifiedFit) as error:
                failures[i] = f"fold {k + 1}: {error}"
                shares[i], objectives[i] = np.nan, np.nan
                log.warning("route lambda tuning: lambda %.3g left out of the choice (%s)", lam, failures[i])
                continue
            finally:
                seconds[i] += time.perf_counter() - started
            predicted, no_route = model.routes(problem.network, test.Z, test.origins, test.destinations)
            shares[i, k] = same_routes(predicted, test.X).mean()  # a context without a route is not reproduced
            if no_route:
                log.info("route lambda tuning: lambda %.3g, fold %d: %d held-out contexts get no route (%s)", lam,
                         k + 1, len(no_route), next(iter(no_route.values())))
            objectives[i, k] = model.objective_
        log.info("route lambda tuning: fold %d of %d (%d routes, %d lambdas) done", k + 1, n_folds, train.size,
                 len(lambdas))
    curve = pd.DataFrame({"lam": lambdas, "reproduced_share": shares.mean(axis=1),
                          "reproduced_share_std": shares.std(axis=1), "training_objective": objectives.mean(axis=1),
                          "fit_seconds": seconds, "n_folds": n_folds, "seed": seed, "failure": failures})
    if curve["reproduced_share"].isna().all():
        raise RestrictedQPNotSolved("route lambda tuning: no lambda could be fitted; "
                                    + "; ".join(f"lambda {lam:g}, {why}" for lam, why in zip(lambdas, failures)))
    best = curve.dropna(subset=["reproduced_share"]).assign(order=lambda c: -c.index).sort_values(
        ["reproduced_share", "lam", "order"], ascending=[False, False, True]).index[0]
    curve["chosen"] = curve.index == best
    return curve
