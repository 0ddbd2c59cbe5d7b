"""Lambda chosen from x* alone: the split's determinism, invariance of the decisions to feature
units (standardized inside the fit), and errors that name the feature or observation."""

import numpy as np
import pytest

from mom_pipeline.methods.cost_free_tuning import (chosen_at_grid_edge, fit_standardized, kfold_indices, reproduced,
                                                   validation_curve)
from mom_pipeline.methods.feature_scaling import FeatureScaleError, FeatureStandardizer
from mom_pipeline.methods.mom import MOM
from mom_pipeline.problems import generate_shortest_path


def _paths(n_train=60, n_test=40, seed=0):
    trial = generate_shortest_path(n_train, n_test, degree=2, eps_bar=0.3, seed=seed)
    return trial, trial.lp.solve(trial.train.C).x


def test_kfold_split_is_deterministic_in_the_seed_and_partitions_the_observations():
    first, again, other = kfold_indices(23, 4, seed=7), kfold_indices(23, 4, seed=7), kfold_indices(23, 4, seed=8)
    assert all(np.array_equal(a[1], b[1]) and np.array_equal(a[0], b[0]) for a, b in zip(first, again))
    assert not all(np.array_equal(a[1], b[1]) for a, b in zip(first, other))
    held_out = np.concatenate([fold[1] for fold in first])
    assert np.array_equal(np.sort(held_out), np.arange(23))  # every observation held out once
    for train, fold in first:
        assert np.intersect1d(train, fold).size == 0 and train.size + fold.size == 23
    with pytest.raises(ValueError, match="n_folds"):
        kfold_indices(3, 4, seed=0)


@pytest.mark.slow
def test_validation_curve_is_reproducible_and_chooses_one_lambda(caplog):
    trial, X = _paths()
    with caplog.at_level("INFO", logger="mom_pipeline.methods.cost_free_tuning"):
        curves = [validation_curve({"formulation": "dual"}, trial.train.Z, X, trial.lp, [1e-4, 1e-2, 1.0], n_folds=3,
                                   seed=1) for _ in range(2)]
    progress = [record.getMessage() for record in caplog.records if "lambda tuning: fold" in record.getMessage()]
    assert len(progress) == 6 and progress[0].startswith("lambda tuning: fold 1 of 3 fitted (")  # one line per fold
    columns = ["lam", "reproduced_share", "heldout_hinge", "chosen"]
    assert curves[0][columns].equals(curves[1][columns])
    curve = curves[0]
    assert curve["chosen"].sum() == 1
    best = curve.loc[curve["chosen"]].iloc[0]
    assert best["reproduced_share"] == curve["reproduced_share"].max()
    assert curve["reproduced_share"].between(0, 1).all()


@pytest.mark.parametrize("formulation", [pytest.param("dual", marks=pytest.mark.slow), "basis"])
def test_the_curve_fitted_as_one_path_per_fold_equals_one_fit_per_lambda(formulation):
    """validation_curve fits a fold's lambdas together (`fit_standardized_grid`, warm starts):
    the scores are those of separate fits, lambda by lambda."""
    from mom_pipeline.methods.cost_free_tuning import _score

    trial, X = _paths()
    Z, lambdas = trial.train.Z, [1e-4, 1e-2, 1.0]
    curve = validation_curve({"formulation": formulation}, Z, X, trial.lp, lambdas, n_folds=3, seed=1)
    for lam, (_, row) in zip(lambdas, curve.iterrows()):
        scores = [_score(fit_standardized(MOM(lam=lam, formulation=formulation), Z[train], X[train],
                                          trial.lp.subset(train)), Z[held], X[held], trial.lp.subset(held))
                  for train, held in kfold_indices(len(Z), 3, 1)]
        assert row["reproduced_share"] == pytest.approx(np.mean([share for share, _ in scores]), abs=1e-12)
        assert row["heldout_hinge"] == pytest.approx(np.mean([hinge for _, hinge in scores]), rel=1e-6)


@pytest.mark.slow
def test_folds_fitted_at_once_give_the_curve_of_folds_fitted_one_after_the_other(monkeypatch):
    """With n_jobs above 1 large folds are fitted on threads at once (forced here on a small
    problem): the same curve, every score equal to the last bit, and the fits ran on two threads."""
    import threading

    import mom_pipeline.methods.cost_free_tuning as tuning
    from mom_pipeline.solvers import policy

    trial, X = _paths()
    Z, lambdas = trial.train.Z, [1e-4, 1e-2, 1.0]
    folds = kfold_indices(len(Z), 3, 1)
    assert tuning.fold_threads({"formulation": "dual", "n_jobs": 2}, Z, X, trial.lp, folds) == 1  # too small
    monkeypatch.setattr(policy, "TUNING_FOLD_WORK", 0)
    assert tuning.fold_threads({"formulation": "dual", "n_jobs": 2}, Z, X, trial.lp, folds) == 2
    assert tuning.fold_threads({"formulation": "dual", "n_jobs": 8}, Z, X, trial.lp, folds) == 3  # at most n_folds
    assert tuning.fold_threads({"formulation": "dual"}, Z, X, trial.lp, folds) == 1  # n_jobs None: one thread
    assert tuning.fold_threads({"formulation": "basis", "n_jobs": 2}, Z, X, trial.lp, folds) == 1
    fitted_on = set()
    fit_grid = tuning.fit_standardized_grid

    def recording(*args, **kwargs):
        fitted_on.add(threading.get_ident())
        return fit_grid(*args, **kwargs)

    monkeypatch.setattr(tuning, "fit_standardized_grid", recording)
    at_once = validation_curve({"formulation": "dual", "n_jobs": 2}, Z, X, trial.lp, lambdas, n_folds=3, seed=1)
    assert threading.get_ident() not in fitted_on and len(fitted_on) == 2
    fitted_on.clear()
    in_turn = validation_curve({"formulation": "dual"}, Z, X, trial.lp, lambdas, n_folds=3, seed=1)
    assert fitted_on == {threading.get_ident()}
    columns = ["lam", "reproduced_share", "reproduced_share_std", "heldout_hinge", "chosen"]
    assert at_once[columns].equals(in_turn[columns])


def test_tuning_fold_threads_policy(monkeypatch):
    """Folds at once only when one fold's block-method work reaches TUNING_FOLD_WORK, at most
    n_folds of them, and only as many as fit the block method's memory budget together."""
    from mom_pipeline.solvers import policy
    from mom_pipeline.solvers.policy import block_ipm_bytes, tuning_fold_threads

    BLOCK_IPM_MAX_BYTES = 6 * 2**30  # the default is half of the machine's memory
    monkeypatch.setattr(policy, "BLOCK_IPM_MAX_BYTES", BLOCK_IPM_MAX_BYTES)

    assert tuning_fold_threads(2, 4, 150, 16, 16, 40, 6, 24) == 1  # the paper's shortest path, T = 200 in 4 folds
    assert tuning_fold_threads(2, 4, 750, 16, 16, 40, 6, 24) == 2  # T = 1000 in 4 folds
    assert tuning_fold_threads(8, 4, 750, 16, 16, 40, 6, 24) == 4
    assert tuning_fold_threads(1, 4, 750, 16, 16, 40, 6, 24) == 1
    # 180 arcs, 7,500 observations a fold: 3.6 GB each, so only one fits the 6 GB budget at a time
    assert block_ipm_bytes(7500, 81, 81, 180, 9, 99) > BLOCK_IPM_MAX_BYTES / 2
    assert tuning_fold_threads(2, 4, 7500, 81, 81, 180, 9, 99) == 1


@pytest.mark.parametrize("scale", [1e7, 1e9])
@pytest.mark.parametrize("formulation", ["dual", "basis"])
def test_decisions_do_not_depend_on_the_units_of_a_feature(scale, formulation):
    trial, X = _paths(seed=2)
    Z, Z_test = trial.train.Z, trial.test.Z
    units = np.ones(Z.shape[1])
    units[1] = scale
    plain = fit_standardized(MOM(lam=1e-2, formulation=formulation), Z, X, trial.lp)
    scaled = fit_standardized(MOM(lam=1e-2, formulation=formulation), Z * units, X, trial.lp)
    # Theta maps back to the user's units: the same costs for the same contexts.
    np.testing.assert_allclose(scaled.predict_cost(Z_test * units), plain.predict_cost(Z_test), rtol=1e-6, atol=1e-9)
    same = reproduced(scaled.decide(Z_test * units, trial.lp).x, plain.decide(Z_test, trial.lp).x)
    assert same.all()


def test_standardized_fit_maps_theta_back_with_an_intercept_column():
    rng = np.random.default_rng(0)
    Z = np.column_stack([rng.normal(5e8, 1e7, 50), rng.normal(size=50), np.full(50, 2.0)])
    scaler = FeatureStandardizer().fit(Z, ["epoch_s", "x", "intercept"])
    assert scaler.intercept_index_ == 2
    standardized = scaler.transform(Z)
    assert abs(standardized[:, 0].mean()) < 1e-9 and standardized[:, 0].std() == pytest.approx(1.0)  # centred
    np.testing.assert_allclose(scaler.mean_[1:], 0)  # already on a unit scale: only divided by its RMS
    Theta_std = rng.normal(size=(4, 3))
    np.testing.assert_allclose(Z @ scaler.coef_to_user(Theta_std).T, scaler.transform(Z) @ Theta_std.T, atol=1e-8)


@pytest.mark.parametrize("column, message", [
    (np.zeros(30), "\\['bad'\\] are constant zero"),
    (np.full(30, 3.0), "\\['bad'\\] are constant: .*intercept 'intercept'"),
    (np.r_[np.ones(29), np.inf], "'bad' has a NaN or infinite value \\(observation 29\\)"),
])
def test_an_unusable_column_is_named(column, message):
    Z = np.column_stack([np.random.default_rng(1).normal(size=30), np.ones(30), column])
    with pytest.raises(FeatureScaleError, match=message):
        FeatureStandardizer().fit(Z, ["x", "intercept", "bad"])


def test_a_constant_column_before_the_appended_intercept_is_the_one_named():
    """The pipeline appends `intercept` after the user's columns: a constant column of the
    user's is named, not the appended intercept (which the user cannot drop)."""
    Z = np.column_stack([np.random.default_rng(1).normal(size=30), np.full(30, 5.0), np.ones(30)])
    with pytest.raises(FeatureScaleError, match="\\['const'\\] are constant: .*intercept 'intercept'"):
        FeatureStandardizer().fit(Z, ["x", "const", "intercept"])
    assert FeatureStandardizer().fit(Z[:, [0, 2]], ["x", "intercept"]).intercept_index_ == 1


class _FailingModel(MOM):
    def fit(self, Z, X_star=None, **kwargs):
        raise RuntimeError("solver stalled")


def test_a_solver_failure_names_the_feature_and_observation():
    trial, X = _paths(n_train=20, n_test=0)
    Z = trial.train.Z.copy()
    Z[13, 2] = 40.0  # an outlier: the most extreme standardized value
    ids = np.array([f"obs-{t}" for t in range(len(Z))])
    names = [f"f{j}" for j in range(Z.shape[1])]
    with pytest.raises(RuntimeError, match="feature 'f2' of observation 'obs-13'"):
        fit_standardized(_FailingModel(lam=1e-2), Z, X, trial.lp, feature_names=names, ids=ids)


def _curve(lambdas, shares, chosen):
    import pandas as pd

    return pd.DataFrame({"lam": lambdas, "reproduced_share": shares, "chosen": [lam == chosen for lam in lambdas]})


def test_a_share_still_rising_at_the_grids_end_is_reported():
    """Rising at the smallest lambda (as on noise-free routes) or at the largest: the message names
    the side and the parameter list; the grid's order does not matter."""
    small = chosen_at_grid_edge(_curve([1e-2, 1e-4, 1e-3], [0.90, 0.97, 0.95], 1e-4), "inverse_routes.tuning.lambdas")
    assert "smallest of inverse_routes.tuning.lambdas" in small and "97.0%" in small and "a smaller lambda" in small
    large = chosen_at_grid_edge(_curve([1e-4, 1e-3, 1e-2], [0.5, 0.6, 0.7], 1e-2), "inverse.tuning.lambdas")
    assert "largest" in large and "a larger lambda" in large


@pytest.mark.parametrize("lambdas, shares, chosen", [
    ([1e-4, 1e-3, 1e-2], [0.95, 0.97, 0.96], 1e-3),  # inside the grid
    ([1e-4, 1e-3, 1e-2], [0.97, 0.97, 0.90], 1e-4),  # at the edge, but level with its neighbour
    ([1e-3], [0.9], 1e-3),  # a single (fixed) lambda
])
def test_a_choice_inside_the_grid_or_level_at_its_end_is_not_reported(lambdas, shares, chosen):
    assert chosen_at_grid_edge(_curve(lambdas, shares, chosen), "inverse.tuning.lambdas") is None


def test_a_neighbour_that_could_not_be_fitted_is_not_a_reason_to_extend_the_grid():
    assert chosen_at_grid_edge(_curve([1e-4, 1e-3], [float("nan"), 0.9], 1e-3), "inverse.tuning.lambdas") is None
