"""MOM inside scikit-learn's own tools: clone, Pipeline and GridSearchCV with a decision-loss
scorer (the regret of the decisions under the true costs), and scikit-learn's NotFittedError."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from mom_pipeline.methods import MOM
from mom_pipeline.problems import generate_shortest_path


@pytest.fixture(scope="module")
def trial():
    trial = generate_shortest_path(60, 0, degree=2, eps_bar=0.5, seed=3)
    return trial, trial.lp.solve(trial.train.C).x


def _regret_scorer(trial):
    """scorer(estimator, Z, X*): minus the mean regret c'(x_hat - x*) of the decisions on those
    samples, with the true costs c looked up by their features (the scorer sees only Z, X*)."""
    data, lp = trial.train, trial.lp
    costs = {z.tobytes(): c for z, c in zip(data.Z, data.C)}

    def score(estimator, Z, X_star):
        C = np.array([costs[z.tobytes()] for z in Z])
        X_hat = estimator.decide(Z, lp).x
        return -float(np.mean(np.einsum("tn,tn->t", C, X_hat - X_star)))

    return score


def test_clone_keeps_the_hyperparameters_and_drops_the_fit(trial):
    trial, X = trial
    model = MOM(lam=0.1, tol=1e-7).fit(trial.train.Z, X, lp=trial.lp)
    copy = clone(model)
    assert copy.get_params() == model.get_params() and not hasattr(copy, "coef_")
    np.testing.assert_array_equal(model.predict(trial.train.Z), model.predict_cost(trial.train.Z))


def test_not_fitted_is_scikit_learns_error(trial):
    trial, _ = trial
    with pytest.raises(NotFittedError):
        MOM().predict(trial.train.Z)
    with pytest.raises(NotFittedError):
        check_is_fitted(MOM())


def test_pipeline_fits_and_predicts_the_same_costs_as_the_steps_by_hand(trial):
    trial, X = trial
    pipeline = Pipeline([("scale", StandardScaler()), ("mom", MOM(lam=0.1))])
    pipeline.fit(trial.train.Z, X, mom__lp=trial.lp)
    scaler = StandardScaler().fit(trial.train.Z)
    by_hand = MOM(lam=0.1).fit(scaler.transform(trial.train.Z), X, lp=trial.lp)
    np.testing.assert_array_equal(pipeline.predict(trial.train.Z), by_hand.predict(scaler.transform(trial.train.Z)))


def test_grid_search_with_a_decision_loss_scorer_picks_the_best_mean_regret(trial):
    trial, X = trial
    scorer = _regret_scorer(trial)
    lams = [1e-3, 1e-1, 10.0]
    search = GridSearchCV(MOM(), {"lam": lams}, scoring=scorer, cv=KFold(3), refit=True)
    search.fit(trial.train.Z, X, lp=trial.lp)
    # the same cross-validation by hand: the chosen lam has the best mean fold score
    by_hand = []
    for lam in lams:
        scores = [scorer(MOM(lam=lam).fit(trial.train.Z[fit], X[fit], lp=trial.lp), trial.train.Z[held], X[held])
                  for fit, held in KFold(3).split(trial.train.Z)]
        by_hand.append(np.mean(scores))
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], by_hand, rtol=1e-12)
    assert search.best_params_ == {"lam": lams[int(np.argmax(by_hand))]}
    assert np.all(np.asarray(by_hand) <= 1e-9)  # minus a regret: never above 0
    np.testing.assert_array_equal(search.best_estimator_.coef_,
                                  MOM(lam=search.best_params_["lam"]).fit(trial.train.Z, X, lp=trial.lp).coef_)
