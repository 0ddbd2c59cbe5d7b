"""Route pipeline nodes: thin wrappers over mom_pipeline.networks."""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from mom_pipeline.methods.cost_free_tuning import chosen_at_grid_edge
from mom_pipeline.methods.feature_scaling import FeatureScaleError, FeatureStandardizer
from mom_pipeline.networks import Network, read_network, read_tntp_network, read_tntp_trips
from mom_pipeline.networks.files import NetworkNotFound, locate_network
from mom_pipeline.networks.fitting import (RouteCostModel, arc_feature_matrix, fit_route_model,
                                           route_validation_curve, same_routes)
from mom_pipeline.networks.generate import generate_routes, grid_network
from mom_pipeline.networks.routes import RouteProblem, validate_route_contexts, validate_route_problem
from mom_pipeline.pipelines.inverse.datasets import file_names
from mom_pipeline.reporting.validation_curve import validation_curve_figure

from .params import InverseRoutesExampleParams, InverseRoutesParams

log = logging.getLogger(__name__)


def load_network(inverse_routes: InverseRoutesParams) -> Network:
    """The network of `network_file` (TNTP ``_net.tntp``, or an arc table ``.csv``)."""
    network = read_network(inverse_routes.network_file, first_thru_node=inverse_routes.first_thru_node)
    log.info("inverse_routes: network %s: %d nodes, %d arcs, zones below node index %d", network.name,
             network.n_nodes, network.n_arcs, network.first_thru_node)
    return network


def example_network(example: InverseRoutesExampleParams) -> tuple[Network, np.ndarray]:
    """(network, trips) of the example's `network` parameter; "auto": Sioux Falls when
    MOM_NETWORKS_DIR has it, else the built-in grid, saying what was missing."""
    if example.network == "grid":
        return grid_network(*example.grid, seed=example.seed)
    try:
        net_file, trips_file = locate_network("SiouxFalls" if example.network == "auto" else example.network)
    except NetworkNotFound as missing:
        if example.network != "auto":
            raise
        log.warning("inverse_routes_example: %s. Running on the built-in %dx%d grid instead.", missing, *example.grid)
        return grid_network(*example.grid, seed=example.seed)
    network = read_tntp_network(net_file)
    return network, read_tntp_trips(trips_file, n_zones=network.first_thru_node or None)


def make_example(example: InverseRoutesExampleParams) -> tuple[Network, pd.DataFrame, ...]:
    """Generated observed routes (`networks.generate`): the network with its baseline attributes,
    its arc table, features, routes, new contexts and their true routes."""
    network, trips = example_network(example)
    tables = generate_routes(network, trips, n_observations=example.n_observations, n_new=example.n_new,
                             noise=example.noise, seed=example.seed, peak_volume_capacity=example.peak_volume_capacity)
    network = tables["network"]
    log.info("inverse_routes_example: %d routes on %s (%d arcs), noise %g", example.n_observations, network.name,
             network.n_arcs, example.noise)
    return (network, network.arc_table(), tables["features"], tables["routes"], tables["new_contexts"],
            tables["new_routes"])


def validate_routes(network: Network, routes: pd.DataFrame, features: pd.DataFrame,
                    inverse_routes: InverseRoutesParams) -> tuple[RouteProblem, pd.DataFrame]:
    """Validated routes and features, and the rejection report (id, file, row, reason)."""
    files = file_names(routes=routes, features=features)
    problem, rejections = validate_route_problem(
        network, routes, features, feature_columns=None if inverse_routes.feature_columns is None else list(
            inverse_routes.feature_columns), add_intercept=inverse_routes.add_intercept,
        on_invalid=inverse_routes.on_invalid, file_names=files)
    try:  # an unusable column stops the run here, before the tuning's fits
        FeatureStandardizer().fit(problem.Z, problem.feature_names)
    except FeatureScaleError as error:
        raise FeatureScaleError(f"file {files['features']!r}: {error}") from error
    if inverse_routes.model.cost_model == "shared":
        arc_feature_matrix(network, inverse_routes.model.arc_features)
    if len(rejections):
        log.info("inverse_routes: %d observations rejected, %d kept (the warning that names the rejection "
                 "report follows when it is saved)", len(rejections), problem.n_samples)
    log.info("inverse_routes: %d routes, %d features", problem.n_samples, problem.Z.shape[1])
    return problem, rejections


def tune_lambda(problem: RouteProblem, inverse_routes: InverseRoutesParams) -> tuple[pd.DataFrame, Figure]:
    """Lambda by K-fold validation: the share of held-out routes reproduced exactly."""
    started = time.perf_counter()
    curve = route_validation_curve(problem, inverse_routes.lambdas, n_folds=inverse_routes.tuning.n_folds,
                                   seed=inverse_routes.tuning.seed, **inverse_routes.fit_options())
    chosen = curve[curve["chosen"]].iloc[0]
    log.info("inverse_routes: lambda %.3g, %.1f%% of held-out routes reproduced (%d-fold, %.1f s)", chosen["lam"],
             100 * chosen["reproduced_share"], int(chosen["n_folds"]), time.perf_counter() - started)
    edge = chosen_at_grid_edge(curve, "inverse_routes.tuning.lambdas") if inverse_routes.model.lam == "auto" else None
    if edge:
        log.warning("inverse_routes: %s", edge)
    return curve, validation_curve_figure(curve, scored_from="held-out routes", fixed=inverse_routes.model.lam != "auto")


def train_route_model(problem: RouteProblem, lambda_validation: pd.DataFrame,
                      inverse_routes: InverseRoutesParams) -> RouteCostModel:
    """RouteMOM on every observation at the chosen lambda; coefficients in the user's units."""
    lam = float(lambda_validation.loc[lambda_validation["chosen"], "lam"].iloc[0])
    started = time.perf_counter()
    model = fit_route_model(problem, lam, **inverse_routes.fit_options())
    model.fit_seconds = time.perf_counter() - started
    log.info("inverse_routes: RouteMOM (%s, lambda %.3g) fitted on %d routes in %.2f s", model.cost_model, lam,
             problem.n_samples, model.fit_seconds)
    return model


def coefficients_table(model: RouteCostModel, problem: RouteProblem) -> pd.DataFrame:
    """Theta by arc (per-arc model: arc, tail, head) or by arc attribute (shared), one column per feature."""
    table = pd.DataFrame(model.coef_, columns=list(model.feature_names))
    if model.cost_model == "per_arc":
        arcs = problem.network.arc_table()[["arc", "tail", "head"]]
        return pd.concat([arcs, table], axis=1)
    table.insert(0, "arc_attribute", list(model.arc_feature_names))
    return table


def _route_strings(network: Network, routes: np.ndarray, origins) -> list[str]:
    """Node lists; empty for a context without a route (all-zero row)."""
    return [" ".join(str(v) for v in network.route_nodes(route, o)) if route.any() else ""
            for route, o in zip(routes, origins)]


def _status(n: int, failures: dict) -> list[str]:
    """'optimal', or why the predicted costs give no route."""
    return [failures.get(t, "optimal") for t in range(n)]


def training_report(model: RouteCostModel, problem: RouteProblem,
                    lambda_validation: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each training route against the model's route, and a summary (training and held-out agreement)."""
    network = problem.network
    predicted, failures = model.routes(network, problem.Z, problem.origins, problem.destinations)
    same = same_routes(predicted, problem.X)
    labels = network.node_labels
    routes = pd.DataFrame({"id": problem.ids, "origin": labels[problem.origins],
                           "destination": labels[problem.destinations],
                           "observed": _route_strings(network, problem.X, problem.origins),
                           "predicted": _route_strings(network, predicted, problem.origins), "equals_observed": same,
                           "status": _status(problem.n_samples, failures)})
    chosen = lambda_validation[lambda_validation["chosen"]].iloc[0]
    info = model.solver_info_
    summary = pd.DataFrame([{
        "network": network.name, "cost_model": model.cost_model, "observations": problem.n_samples,
        "lam": model.lam, "training_reproduced_share": float(same.mean()),
        "heldout_reproduced_share": float(chosen["reproduced_share"]),
        "heldout_reproduced_share_std": float(chosen["reproduced_share_std"]), "n_folds": int(chosen["n_folds"]),
        "training_objective": model.objective_, "certificate_gap": info.get("certificate_gap", np.nan),
        "fit_seconds": getattr(model, "fit_seconds", np.nan)}])
    log.info("inverse_routes: the model reproduces %.1f%% of the training routes, %.1f%% of held-out routes",
             100 * same.mean(), 100 * chosen["reproduced_share"])
    return routes, summary


def route_new_contexts(model: RouteCostModel, network: Network, new_contexts: pd.DataFrame,
                       inverse_routes: InverseRoutesParams) -> pd.DataFrame:
    """The model's routes for new contexts (id, origin, destination, features) as node lists, with their costs."""
    files = file_names(new_contexts=new_contexts)
    ids, Z, origins, destinations = validate_route_contexts(network, new_contexts, model.feature_names,
                                                            add_intercept=inverse_routes.add_intercept,
                                                            file_name=files["new_contexts"])
    costs = model.costs(Z)
    routes, failures = model.routes(network, Z, origins, destinations)
    if failures:
        log.warning("inverse_routes: %d new contexts get no route from the model (see the status column): %s",
                    len(failures), next(iter(failures.values())))
    labels = network.node_labels
    cost = np.einsum("tn,tn->t", costs, routes)
    cost[list(failures)] = np.nan
    return pd.DataFrame({"id": ids, "origin": labels[origins], "destination": labels[destinations],
                         "nodes": _route_strings(network, routes, origins), "predicted_cost": cost,
                         "status": _status(len(ids), failures)})


def compare_new_routes(new_routes: pd.DataFrame, true_new_routes: pd.DataFrame) -> pd.DataFrame:
    """The example's check: the share of new contexts whose predicted route is the true one."""
    merged = new_routes.merge(true_new_routes, on="id", suffixes=("", "_true"), validate="one_to_one")
    same = (merged["nodes"].fillna("").astype(str) == merged["nodes_true"].astype(str)).to_numpy()
    log.info("inverse_routes_example: %.1f%% of the new contexts get their true route", 100 * same.mean())
    return pd.DataFrame([{"new_contexts": len(merged), "true_route_share": float(same.mean())}])
