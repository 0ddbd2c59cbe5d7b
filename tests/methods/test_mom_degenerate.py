"""Degenerate MOM fits are not silent (issue 51 item 5): an all-zero feature matrix is
refused, and a lambda so large that Theta is zero to round-off is named in a warning."""

import warnings

import numpy as np
import pytest

from mom_pipeline.inverse import make_example_dataset, validate_inverse_problem
from mom_pipeline.methods.mom import MOM, NEGLIGIBLE_COST, DegenerateFitWarning, negligible_costs


@pytest.fixture(scope="module")
def problem():
    tables = make_example_dataset(n_observations=40, seed=3)
    problem, _ = validate_inverse_problem(**{name: tables[name] for name in
                                             ("features", "decisions", "constraints", "rhs", "bounds")},
                                          add_intercept=True)
    return problem


@pytest.mark.parametrize("formulation", ["dual", "basis"])
def test_an_all_zero_feature_matrix_is_refused(problem, formulation):
    with pytest.raises(ValueError, match=r"every feature of Z is zero \(all 5 columns on the 40 samples\)"):
        MOM(formulation=formulation).fit(np.zeros_like(problem.Z), problem.X_std, lp=problem.lp)
    with pytest.raises(ValueError, match="every feature of Z is zero"):
        MOM.fit_many([MOM(formulation=formulation, lam=lam) for lam in (1e-2, 1.0)], np.zeros_like(problem.Z),
                     problem.X_std, lp=problem.lp)


@pytest.mark.parametrize("formulation", ["dual", "basis"])
def test_a_lambda_that_leaves_theta_zero_to_round_off_is_named(problem, formulation):
    with pytest.warns(DegenerateFitWarning, match=r"MOM\(lam=1e\+300\): the fitted Theta is zero to round-off"):
        model = MOM(formulation=formulation, lam=1e300).fit(problem.Z, problem.X_std, lp=problem.lp)
    assert negligible_costs(model.coef_, problem.Z) <= NEGLIGIBLE_COST
    with pytest.warns(DegenerateFitWarning, match=r"lam=1e\+300"):  # the lambda path names it too
        MOM.fit_many([MOM(formulation=formulation, lam=lam) for lam in (1e-2, 1e300)], problem.Z, problem.X_std,
                     lp=problem.lp)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateFitWarning)  # a sensible lambda says nothing
        model = MOM(formulation=formulation, lam=100.0).fit(problem.Z, problem.X_std, lp=problem.lp)
    assert negligible_costs(model.coef_, problem.Z) is None
