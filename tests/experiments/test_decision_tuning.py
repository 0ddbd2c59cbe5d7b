"""MOM from x* alone tuned from decisions alone (`tuning: decisions`): the choice of lambda
never reads a cost, and it is the inverse pipeline's `validation_curve`."""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from mom_pipeline.experiments import generate_experiment, parse_spec, solve_experiment
from mom_pipeline.experiments.storage import lighten
from mom_pipeline.experiments.train import SpecError, _seed, hyperparameter_rows, train_method
from mom_pipeline.methods.cost_free_tuning import validation_curve
from mom_pipeline.problems.common import Samples

LAMBDAS = [1e-4, 1e-2, 1.0]
SPEC = {"name": "t", "problem": "shortest_path", "sweep": {"param": "degree", "values": [4]},
        "fixed": {"n_train": 48, "n_test": 10, "eps_bar": 0.5, "cost_formula": "pyepo"}, "trials": 1, "seed": 11,
        "methods": {"MOM x*": {"estimator": "MOM", "params": {"formulation": "dual"}, "x_star_only": True,
                               "tuning": "decisions", "grid": {"lam": LAMBDAS}},
                    "MOM x* (cost-tuned)": {"estimator": "MOM", "params": {"formulation": "dual"},
                                            "x_star_only": True, "grid": {"lam": LAMBDAS}}}}


def _poisoned(trial, value=np.nan):
    """The trial with every training cost replaced by `value` (the x* stay those of the true costs)."""
    data = trial.data
    train = Samples(Z=data.train.Z, C=np.full_like(data.train.C, value))
    return dataclasses.replace(trial, data=dataclasses.replace(data, train=train))


@pytest.fixture(scope="module")
def trial_and_solutions():
    spec = parse_spec(SPEC)
    trials = generate_experiment(spec)
    return spec, trials[0], solve_experiment(trials, "solver")[0]


@pytest.mark.slow  # a tuning over decisions on every fold, three times (about 5 CPU-s)
def test_the_choice_never_reads_a_cost(trial_and_solutions):
    spec, trial, solutions = trial_and_solutions
    config = spec.methods["MOM x*"]
    honest = train_method(spec, config, trial, solutions)
    for value in (np.nan, -1e300):  # NaN and absurd costs: any read would change or break the choice
        poisoned = train_method(spec, config, _poisoned(trial, value), solutions)
        assert poisoned.best_params == honest.best_params
        np.testing.assert_array_equal(poisoned.model.coef_, honest.model.coef_)
        columns = ["lam", "reproduced_share", "heldout_hinge", "chosen"]
        pd.testing.assert_frame_equal(poisoned.tuning_scores[columns], honest.tuning_scores[columns])
    # the poisoning does reach a method tuned with costs: none of its cells can be scored
    with pytest.raises(ValueError, match="no grid cell could be scored"):
        train_method(spec, spec.methods["MOM x* (cost-tuned)"], _poisoned(trial), solutions)


@pytest.mark.slow
def test_the_choice_is_the_inverse_pipelines_validation_curve(trial_and_solutions):
    spec, trial, solutions = trial_and_solutions
    trained = train_method(spec, spec.methods["MOM x*"], trial, solutions)
    data = trial.data
    curve = validation_curve({"formulation": "dual"}, data.train.Z, solutions.train.x, data.lp, LAMBDAS, n_folds=4,
                             seed=_seed(spec, trial.setting, trial.trial))
    columns = ["lam", "reproduced_share", "reproduced_share_std", "heldout_hinge", "chosen"]
    pd.testing.assert_frame_equal(trained.tuning_scores[columns], curve[columns])
    assert trained.best_params["lam"] == curve.loc[curve["chosen"], "lam"].item()
    assert trained.model.lam == trained.best_params["lam"] and trained.model.formulation == "dual"
    # refitted on every training sample, on standardized features like the inverse pipeline's model
    assert hasattr(trained.model, "feature_scaling_") and trained.model.n_features_in_ == data.train.Z.shape[1]
    # the hyperparameter table says the choice was not scored with costs
    (row,) = hyperparameter_rows(spec, 0, 4, 0, {"MOM x*": trained})
    assert np.isnan(row["validation_relative_loss"]) and row["grid_cells"] == 3 and row["failed_cells"] == 0
    assert row["tuning_seconds"] >= row["fit_seconds"] >= 0


@pytest.mark.slow
def test_a_stored_decision_tuned_model_refits_to_the_same_model(trial_and_solutions):
    spec, trial, solutions = trial_and_solutions
    trained = train_method(spec, spec.methods["MOM x*"], trial, solutions)
    stored = lighten({"MOM x*": trained}, trial, "none", spec.methods)["MOM x*"].model
    np.testing.assert_allclose(stored.predict_cost(trial.data.test.Z), trained.model.predict_cost(trial.data.test.Z))
    refit = stored.refit(trial, solutions)
    np.testing.assert_allclose(refit.coef_, trained.model.coef_, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("method, message", [
    ({"estimator": "Ridge", "tuning": "decisions", "grid": {"lam": [1.0]}}, "tuning from decisions needs"),
    ({"estimator": "MOM", "tuning": "decisions", "grid": {"lam": [1.0]}}, "x_star_only=False"),
    ({"estimator": "MOM", "x_star_only": True, "tuning": "decisions", "grid": {"lam": [1.0], "tol": [1e-8]}},
     "a grid of lam alone"),
    ({"estimator": "KernelMOM", "x_star_only": True, "tuning": "decisions", "grid": {"lam": [1.0]}},
     "tuning from decisions needs an estimator of \\['MOM'\\]"),
    ({"estimator": "MOM", "x_star_only": True, "tuning_folds": 3, "grid": {"lam": [1.0]}}, "tuning: decisions only"),
    ({"estimator": "MOM", "x_star_only": True, "tuning": "decisions", "tuning_folds": 1, "grid": {"lam": [1.0]}},
     "tuning_folds"),
    ({"estimator": "MOM", "tuning": "cost", "grid": {"lam": [1.0]}}, "tuning"),
])
def test_bad_decision_tuning_is_refused_when_parsed(method, message):
    with pytest.raises(SpecError, match=message):
        parse_spec(dict(SPEC, methods={"M": method}))
