"""Kernel-sized working sets (`hinge_working_set.solve_working_set`) take at most as many broken rows
per round as they hold (`policy.WORKING_SET_JOIN_MIN` at least), the furthest from the margin
first; the rounds end only when no row breaks its assumption, so the optima are those of the
uncapped rounds and cvxpy's."""

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
def rbf_problem():
    """An RBF kernel MOM problem of 60 samples (600 rows), gamma 1 with the figures' unsquared norm."""
    return rbf_kernel_problem(60, degree=2, seed=5, gamma=1.0, rbf_norm="unsquared")


def test_furthest_broken_rows_join_first():
    broken = np.array([True, False, True, True, True, False])
    u = np.array([0.5, 0.0, 1.2, 0.99, 3.0, 1.0])
    joining, held = hinge_working_set._furthest_broken(broken, u, 2)
    assert held == 2 and joining.tolist() == [True, False, False, False, True, False]
    joining, held = hinge_working_set._furthest_broken(broken, u, 4)
    assert held == 0 and joining.tolist() == broken.tolist()


@pytest.mark.slow
def test_capped_rounds_end_at_the_uncapped_optima(rbf_problem, monkeypatch):
    M, features = rbf_problem
    assert adaptive_working_set(M.shape[2] * features.shape[1])
    # A cap of 5 rows (not 100) makes it bind on this small problem.
    monkeypatch.setattr(policy, "WORKING_SET_JOIN_MIN", 5)
    capped = solve_mom_path(M, features, LAMS)
    assert sum(info.get("held_back", 0) for _, info in capped) > 0  # rows were held back
    monkeypatch.setattr(policy, "WORKING_SET_JOIN_ROUNDS", 0)  # no cap
    uncapped = solve_mom_path(M, features, LAMS)
    assert sum(info.get("held_back", 0) for _, info in uncapped) == 0
    for lam, (Theta, _), (Theta_uncapped, _) in zip(LAMS, capped, uncapped):
        assert mom_objective(Theta, M, features, lam) == pytest.approx(
            mom_objective(Theta_uncapped, M, features, lam), rel=1e-8)
    held = [i for i, (_, info) in enumerate(capped) if info.get("held_back", 0)]
    for i in held[:3]:  # where the cap bound
        reference, _ = solve_hinge_qp_cvxpy(M, features, LAMS[i])
        assert mom_objective(capped[i][0], M, features, LAMS[i]) == pytest.approx(
            mom_objective(reference, M, features, LAMS[i]), rel=1e-6)
