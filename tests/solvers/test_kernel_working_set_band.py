"""The first working set of kernel-sized problems (`hinge_working_set.solve_working_set`): the rows
within `policy.KERNEL_LINEAR_BELOW` below the margin start in it instead of being assumed
violated; the optimum does not depend on it."""

import numpy as np
import pytest

from mom_pipeline.solvers import policy
import mom_pipeline.solvers.hinge_working_set as hinge_working_set
from mom_pipeline.methods.mom import mom_objective, solve_hinge_qp, solve_hinge_qp_cvxpy
from mom_pipeline.methods.mom_problem import MOMHingeRows
from kernel_problems import rbf_kernel_problem
from mom_pipeline.solvers.policy import KERNEL_LINEAR_BELOW, adaptive_working_set


@pytest.fixture(scope="module")
def rbf_problem():
    return rbf_kernel_problem(50, degree=1, seed=21, gamma=1.0)


def _first_round(monkeypatch) -> list:
    """Record the working and linear masks of each restricted QP."""
    rounds = []
    original = hinge_working_set.restricted_qp_warm

    def recorded(rows, lam, weight, working, linear, *args, **kwargs):
        rounds.append((working.copy(), linear.copy()))
        return original(rows, lam, weight, working, linear, *args, **kwargs)

    monkeypatch.setattr(hinge_working_set, "restricted_qp_warm", recorded)
    return rounds


def test_kernel_sized_working_sets_start_with_the_band_below_the_margin(rbf_problem, monkeypatch):
    M, features = rbf_problem
    assert adaptive_working_set(M.shape[2] * features.shape[1])
    lam = 1e-2
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=M.shape[2] * features.shape[1]) * 0.3  # margins spread around 1
    rounds = _first_round(monkeypatch)
    Theta, _ = solve_hinge_qp(M, features, lam, w0=w0)
    rows = MOMHingeRows(M, features)
    u = rows.margins(w0)
    working, linear = rounds[0]
    below = (u >= 1.0 - KERNEL_LINEAR_BELOW) & (u < 1.0 - 1e-2)
    assert below.any()
    assert working[below].all()  # with linear MOM's 1e-2 these would be assumed violated
    np.testing.assert_array_equal(linear, u < 1.0 - KERNEL_LINEAR_BELOW)
    reference, _ = solve_hinge_qp_cvxpy(M, features, lam)
    f_ref = mom_objective(reference, M, features, lam)
    assert mom_objective(Theta, M, features, lam) == pytest.approx(f_ref, rel=1e-6)


def test_the_band_does_not_change_a_kernel_path(rbf_problem, monkeypatch):
    """The same regularization path with linear MOM's band (1e-2) ends at the same optima."""
    M, features = rbf_problem
    from mom_pipeline.methods.mom_solve import solve_mom_path

    lams = [float(v) for v in np.logspace(-5, 1, 7)]
    wide = solve_mom_path(M, features, lams)
    monkeypatch.setattr(policy, "KERNEL_LINEAR_BELOW", 1e-2)
    narrow = solve_mom_path(M, features, lams)
    for lam, (Theta_wide, _), (Theta_narrow, _) in zip(lams, wide, narrow):
        assert mom_objective(Theta_wide, M, features, lam) == pytest.approx(
            mom_objective(Theta_narrow, M, features, lam), rel=1e-8)
