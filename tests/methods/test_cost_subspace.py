"""The dual formulation solved on the costs its reduced costs see (`constraint_null_space`):
reduced costs do not change when c moves by A'y, so every reduced-cost row lies in A's null
space, and the optimum's Theta has no part outside it. The block method works there; the
reference (Clarabel on the whole problem) does not."""

import numpy as np
import pytest

from mom_pipeline.methods.mom import MOM
from mom_pipeline.methods.mom_problem import constraint_null_space, operators_of_bases
from mom_pipeline.problems import generate_knapsack, generate_shortest_path


@pytest.mark.parametrize("problem", ["shortest_path", "knapsack"])
def test_reduced_cost_rows_lie_in_the_null_space_of_the_constraints(problem):
    trial = (generate_shortest_path(50, 0, degree=2, seed=3) if problem == "shortest_path"
             else generate_knapsack(50, 0, degree=2, feature_low=-1.0, seed=3))
    A = np.asarray(trial.lp.A, dtype=float)
    M = operators_of_bases(A, trial.lp.solve(trial.train.C).basis)
    U = constraint_null_space(A)
    assert U.shape == (A.shape[1], A.shape[1] - np.linalg.matrix_rank(A))  # 16 of 40 arcs; 10 of 21 costs
    np.testing.assert_allclose(U.T @ U, np.eye(U.shape[1]), atol=1e-12)
    rows = M.reshape(-1, A.shape[1])
    np.testing.assert_allclose(rows - (rows @ U) @ U.T, 0.0, atol=1e-12 * np.abs(rows).max())
    assert constraint_null_space(np.zeros((2, 5))) is None  # nothing to reduce


def test_dual_formulation_on_the_null_space_equals_the_whole_problem():
    trial = generate_shortest_path(120, 0, degree=4, eps_bar=0.5, seed=5)
    X = trial.lp.solve(trial.train.C).x
    A = np.asarray(trial.lp.A, dtype=float)
    for lam in (1e-6, 1e-4, 1e-1):
        fast = MOM(lam=lam, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)
        reference = MOM(lam=lam, formulation="dual", solver="cvxpy").fit(trial.train.Z, X, lp=trial.lp)
        assert fast.solver_info_["solver"] == "block_ipm"
        assert fast.objective_ == pytest.approx(reference.objective_, rel=1e-6)
        assert fast.objective_ <= reference.objective_ * (1 + 1e-8)
        np.testing.assert_allclose(A @ fast.coef_, 0.0, atol=1e-10 * np.abs(fast.coef_).max())
