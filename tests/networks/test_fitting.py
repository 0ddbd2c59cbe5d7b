"""RouteMOM on a RouteProblem: coefficients in the user's units give the costs the fit saw, and
lambda is chosen by held-out routes."""

from __future__ import annotations

import numpy as np
import pytest

from mom_pipeline.methods.feature_scaling import FeatureScaleError, FeatureStandardizer
from mom_pipeline.networks.fitting import fit_route_model, route_validation_curve, same_routes
from mom_pipeline.networks.generate import generate_routes, grid_network
from mom_pipeline.networks.routes import validate_route_problem

pytest.importorskip("mom_pipeline.methods.route_mom", reason="the estimator RouteMOM is not in this checkout")


@pytest.fixture(scope="module")
def problem():
    network, trips = grid_network(3, 3)
    tables = generate_routes(network, trips, n_observations=60, n_new=0, seed=2)
    tables["features"]["rain"] *= 1000.0  # a column in other units: the mapping back must undo it
    return validate_route_problem(tables["network"], tables["routes"], tables["features"])[0]


@pytest.mark.parametrize("cost_model", ["per_arc", "shared"])
def test_user_unit_costs_equal_the_fitted_ones(problem, cost_model):
    model = fit_route_model(problem, 0.01, cost_model=cost_model, arc_features=["free_flow_time", "baseline_delay"])
    scaler = FeatureStandardizer().fit(problem.Z, problem.feature_names)
    F = model.arc_features
    F_std = None if F is None else F / np.sqrt(np.mean(F**2, axis=0))
    fitted = model.estimator.predict(scaler.transform(problem.Z), arc_features=F_std)
    np.testing.assert_allclose(model.costs(problem.Z), fitted, rtol=1e-10, atol=1e-10)
    assert model.coef_.shape == ((problem.network.n_arcs if cost_model == "per_arc" else 2), problem.Z.shape[1])
    routes, failures = model.routes(problem.network, problem.Z, problem.origins, problem.destinations)
    assert same_routes(routes, problem.X).mean() > 0.8 and not failures


@pytest.mark.slow
def test_the_curve_chooses_the_best_held_out_share(problem):
    curve = route_validation_curve(problem, [1e-3, 1e-1, 10.0], n_folds=3, seed=0, cost_model="shared",
                                   arc_features=["free_flow_time", "baseline_delay"])
    assert curve["chosen"].sum() == 1
    assert curve.loc[curve["chosen"], "reproduced_share"].iloc[0] == curve["reproduced_share"].max()
    assert ((curve["reproduced_share"] >= 0) & (curve["reproduced_share"] <= 1)).all()


def test_a_zero_arc_attribute_is_named(problem):
    with pytest.raises(FeatureScaleError, match=r"\['toll'\] are zero on every arc"):
        fit_route_model(problem, 0.01, cost_model="shared", arc_features=["free_flow_time", "toll"])


def test_a_lambda_whose_fit_is_not_solved_is_left_out_with_a_warning(problem, monkeypatch, caplog):
    """A restricted QP that Clarabel does not solve at one lambda: that lambda's share is NaN,
    its failure is kept in the curve and logged, its other folds are not fitted, and the choice
    is among the others; with every lambda failing the curve raises."""
    import mom_pipeline.networks.fitting as fitting
    from mom_pipeline.solvers.network_restricted import RestrictedQPNotSolved

    real_fit, calls = fitting.fit_route_model, []

    def failing_at(bad):
        def fit(train_problem, lam, **options):
            calls.append(lam)
            if lam in bad:
                raise RestrictedQPNotSolved(f"network MOM: the restricted QP was not solved: MaxIterations (lam {lam:g})")
            return real_fit(train_problem, lam, **options)
        return fit

    monkeypatch.setattr(fitting, "fit_route_model", failing_at({1e-6}))
    with caplog.at_level("WARNING", logger="mom_pipeline.networks.fitting"):
        curve = route_validation_curve(problem, [1e-6, 1e-2], n_folds=3, seed=0, cost_model="shared",
                                       arc_features=["free_flow_time", "baseline_delay"])
    assert calls.count(1e-6) == 1 and calls.count(1e-2) == 3
    failed = curve.set_index("lam").loc[1e-6]
    assert np.isnan(failed["reproduced_share"]) and "fold 1" in failed["failure"] and "MaxIterations" in failed["failure"]
    assert not failed["chosen"] and curve.set_index("lam").loc[1e-2, "chosen"]
    assert "lambda 1e-06 left out of the choice" in caplog.text
    monkeypatch.setattr(fitting, "fit_route_model", failing_at({1e-6, 1e-2}))
    with pytest.raises(RestrictedQPNotSolved, match="no lambda could be fitted; lambda 1e-06, fold 1"):
        route_validation_curve(problem, [1e-6, 1e-2], n_folds=3, seed=0, cost_model="shared",
                               arc_features=["free_flow_time", "baseline_delay"])
