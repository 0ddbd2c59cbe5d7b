"""`mom_solve.solve_mom(..., formulation=)`: one entry point for both formulations."""

import numpy as np
import pytest

from mom_pipeline.methods.mom import MOM
from mom_pipeline.methods.mom_dual_problem import dual_formulation_certificate, dual_formulation_objective
from mom_pipeline.methods.mom_problem import mom_objective, operators_of_bases
from mom_pipeline.methods.mom_solve import solve_mom
from mom_pipeline.problems import generate_shortest_path


@pytest.fixture(scope="module")
def degenerate():
    trial = generate_shortest_path(60, 0, degree=4, eps_bar=0.5, seed=5)
    return trial, trial.lp.solve(trial.train.C)


def test_dual_formulation_through_solve_mom_is_certified_and_is_what_fit_learns(degenerate):
    trial, solution = degenerate
    Z, X, A = trial.train.Z, solution.x, np.asarray(trial.lp.A, dtype=float)
    lam = 1e-2
    Theta, info = solve_mom(None, Z, lam, A=A, formulation="dual", basis=trial.lp.basis_from_solution(X), X=X)
    y, flows = info["duals"], info["flows"]
    certificate = dual_formulation_certificate(Theta, y, flows, A, X, Z, lam)
    assert certificate["relative_gap"] <= 1e-6 and info["solver"] == "block_ipm" and info["iterations"] >= 1
    model = MOM(lam=lam, formulation="dual").fit(Z, X, lp=trial.lp)
    np.testing.assert_array_equal(model.coef_, Theta)
    assert model.objective_ == dual_formulation_objective(Theta, y, A, X, Z, lam)


def test_basis_formulation_through_solve_mom_matches_the_reference(degenerate):
    trial, solution = degenerate
    M = operators_of_bases(trial.lp.A, solution.basis)
    Theta, info = solve_mom(M, trial.train.Z, 1e-2)
    reference, _ = solve_mom(M, trial.train.Z, 1e-2, solver="cvxpy")
    assert mom_objective(Theta, M, trial.train.Z, 1e-2) == pytest.approx(
        mom_objective(reference, M, trial.train.Z, 1e-2), rel=1e-6)
    assert info["iterations"] >= 1 and info["path"] in ("active_set", "working_set")


def test_unknown_formulation_and_missing_dual_inputs_are_named(degenerate):
    trial, solution = degenerate
    with pytest.raises(ValueError, match="unknown formulation 'primal'"):
        solve_mom(None, trial.train.Z, 1e-2, formulation="primal")
    with pytest.raises(ValueError, match="formulation='dual' needs"):
        solve_mom(None, trial.train.Z, 1e-2, formulation="dual")
