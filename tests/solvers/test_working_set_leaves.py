"""Kernel-sized working sets (`hinge_working_set.solve_working_set`): rows far from the margin at a
restricted optimum leave the working set, up to `policy.WORKING_SET_LEAVES` times each; the optima
do not depend on how often they may."""

import numpy as np
import pytest

from mom_pipeline.solvers import policy
import mom_pipeline.solvers.hinge_working_set as hinge_working_set
from mom_pipeline.methods.mom import mom_objective, solve_hinge_qp_cvxpy
from mom_pipeline.methods.mom_solve import solve_mom_path
from kernel_problems import rbf_kernel_problem
from mom_pipeline.solvers.policy import adaptive_working_set

LAMS = [float(v) for v in np.logspace(2, -6, 9)]


@pytest.fixture(scope="module")
def wide_rbf_problem():
    """A wide RBF kernel (gamma 5, the figures' unsquared norm), where rows leave and come back."""
    return rbf_kernel_problem(50, degree=1, seed=21, gamma=5.0, rbf_norm="unsquared")


@pytest.mark.slow
def test_rows_leave_again_and_the_path_ends_at_the_optima(wide_rbf_problem, monkeypatch):
    M, features = wide_rbf_problem
    assert adaptive_working_set(M.shape[2] * features.shape[1])
    path = solve_mom_path(M, features, LAMS)
    # (a lam solved by the active-set guess from the previous optimum has no working set)
    assert max(info.get("most_leaves", 0) for _, info in path) >= 2  # rows came back and left again
    monkeypatch.setattr(policy, "WORKING_SET_LEAVES", 1)
    once = solve_mom_path(M, features, LAMS)
    assert max(info.get("most_leaves", 0) for _, info in once) <= 1  # the cap holds
    for lam, (Theta, _), (Theta_once, _) in zip(LAMS, path, once):
        assert mom_objective(Theta, M, features, lam) == pytest.approx(
            mom_objective(Theta_once, M, features, lam), rel=1e-8)
    for i in (2, 3, 5):  # where rows left most often
        reference, _ = solve_hinge_qp_cvxpy(M, features, LAMS[i])
        assert mom_objective(path[i][0], M, features, LAMS[i]) == pytest.approx(
            mom_objective(reference, M, features, LAMS[i]), rel=1e-6)
