"""Every registered method follows the estimator conventions and says whether it needs c."""

import numpy as np
import pytest
from sklearn.base import clone

import mom_pipeline.methods as methods
from mom_pipeline.methods import MissingCostsError
from mom_pipeline.problems import generate_knapsack


@pytest.mark.parametrize("name", sorted(methods.METHODS))
def test_estimator_conventions(name):
    entry = methods.method_entry(name)
    cls = entry.cls
    assert getattr(methods, cls.__name__) is cls  # every registered method is exported
    model = cls()
    assert clone(model).get_params() == model.get_params()  # hyperparameters only in __init__
    assert entry.needs_costs == cls.needs_costs
    trial = generate_knapsack(30, 5, degree=1, seed=0)
    X = trial.lp.solve(trial.train.C).x
    if cls.needs_costs:
        with pytest.raises(MissingCostsError, match="needs the true costs"):
            cls().fit(trial.train.Z, X, lp=trial.lp)
        fitted = model.fit(trial.train.Z, X, lp=trial.lp, C=trial.train.C)
    else:
        fitted = model.fit(trial.train.Z, X, lp=trial.lp)  # x* only: inverse LP
    assert fitted is model  # fit returns self
    assert any(hasattr(fitted, learned) for learned in ("coef_", "model_", "dual_coef_"))
    C_hat = fitted.predict_cost(trial.test.Z)
    assert C_hat.shape == (5, 21) and np.isfinite(C_hat).all()
    assert fitted.decide(trial.test.Z, trial.lp).x.shape == (5, 21)


def test_unknown_method_names_the_registered_ones():
    with pytest.raises(ValueError, match="unknown estimator 'Lasso'.*'MOM'"):
        methods.method_entry("Lasso")


def test_a_non_finite_prediction_is_named_when_deciding():
    """Finite but huge coefficients (a diverged step size) overflow on new contexts; decide says
    which model, sample and column, instead of the LP layer's complaint about its input."""
    trial = generate_knapsack(30, 5, degree=1, seed=0)
    model = methods.Ridge(lam=1e-3).fit(trial.train.Z, None, lp=trial.lp, C=trial.train.C)
    model.coef_ = model.coef_.copy()
    model.coef_[3] = 1e308  # the cost of item 3 overflows on these contexts
    Z = np.full_like(trial.test.Z, 2.0)
    with pytest.raises(FloatingPointError, match=r"^Ridge\(lam=0.001.*\) predicted a non-finite cost \(inf\) "
                                                 r"for sample 0, column 3, on 5 of 5 samples: its fit diverged"):
        model.decide(Z, trial.lp)
    model.coef_[3] = 1.0
    assert model.decide(Z, trial.lp).x.shape == (5, 21)
