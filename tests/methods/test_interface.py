"""Every exported method follows the estimator conventions and says whether it needs c."""

import numpy as np
import pytest
from sklearn.base import clone

import mom_pipeline.methods as methods
from mom_pipeline.methods import MissingCostsError
from mom_pipeline.problems import generate_knapsack


@pytest.mark.parametrize("name", methods.NEEDS_ONLY_X_STAR + methods.NEEDS_COSTS)
def test_estimator_conventions(name):
    cls = getattr(methods, name)
    model = cls()
    assert clone(model).get_params() == model.get_params()  # hyperparameters only in __init__
    assert cls.needs_costs == (name in methods.NEEDS_COSTS)
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
