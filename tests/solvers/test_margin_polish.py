"""The cancellation-free duality gap of a restricted hinge QP (`margin_polish.restricted_gap`) and
its use: a stalled box dual at tiny lam is accepted from its polished point only when that gap
certifies it, and then agrees with Clarabel on the primal, the fallback it replaces."""

import cvxpy as cp
import numpy as np
import pytest

import mom_pipeline.solvers.hinge_working_set as hinge_working_set
from mom_pipeline.methods.kernels import KernelMOM
from mom_pipeline.methods.mom_problem import MOMHingeRows
from mom_pipeline.methods.tuning import validation_split
from mom_pipeline.problems import generate_knapsack
from mom_pipeline.solvers.margin_polish import restricted_gap, restricted_objective


def _restricted_problem(seed: int):
    """Random MOM-shaped rows (T = 30 samples, K = 4 rows, n = 6, d = 3), a working set and
    violated rows folded into a gradient, as a working-set round builds them."""
    rng = np.random.default_rng(seed)
    rows = MOMHingeRows(rng.normal(size=(30, 4, 6)), rng.normal(size=(30, 3)))
    order = rng.permutation(rows.n_rows)
    index, linear = np.sort(order[:50]), np.sort(order[50:60])
    weight = 1.0 / 30
    gradient = weight * rows.weighted_sum_of(linear, np.ones(linear.size))
    return rows, index, gradient, weight


def _cvxpy_optimum(rows, lam, weight, index, gradient):
    """(min P, w*, alpha*) of the restricted QP by cvxpy, with the hinge rows' multipliers."""
    H = rows.dense_rows(index)
    w, s = cp.Variable(rows.n_vars), cp.Variable(index.size)
    margin = H @ w + s >= 1
    problem = cp.Problem(cp.Minimize(0.5 * lam * cp.sum_squares(w) - gradient @ w + weight * cp.sum(s)),
                         [margin, s >= 0])
    problem.solve(solver=cp.CLARABEL)
    return problem.value, w.value, margin.dual_value


@pytest.mark.parametrize("seed", [0, 1])
def test_restricted_gap_is_the_primal_dual_difference_and_bounds_the_error(seed):
    rows, index, gradient, weight = _restricted_problem(seed)
    lam = 1e-2
    rng = np.random.default_rng(seed + 10)
    w, alpha = rng.normal(size=rows.n_vars), rng.uniform(0, weight, size=index.size)
    pull = gradient + rows.weighted_sum_of(index, alpha)
    dual = -pull @ pull / (2 * lam) + alpha.sum()  # the Lagrange dual, evaluated directly
    primal = restricted_objective(rows, lam, weight, w, index, gradient)
    gap = restricted_gap(rows, lam, weight, w, alpha, index, gradient)
    assert gap == pytest.approx(primal - dual, rel=1e-10)

    optimum, w_star, alpha_star = _cvxpy_optimum(rows, lam, weight, index, gradient)
    assert restricted_gap(rows, lam, weight, w_star, alpha_star, index, gradient) <= 1e-7 * abs(optimum)
    moved = w_star + 1e-3 * rng.normal(size=rows.n_vars)
    error = restricted_objective(rows, lam, weight, moved, index, gradient) - optimum
    assert error > 0
    assert restricted_gap(rows, lam, weight, moved, alpha_star, index, gradient) >= error - 1e-9 * abs(optimum)


def test_restricted_gap_keeps_its_digits_at_tiny_lam():
    """At lam = 1e-14 the dual's -||gradient + H'alpha||^2 / (2 lam) is about 1e13 for these rows:
    P - D evaluated as a difference is round-off, the certificate is not."""
    rows, index, gradient, weight = _restricted_problem(2)
    lam = 1e-14
    optimum, w_star, alpha_star = _cvxpy_optimum(rows, 1e-2, weight, index, gradient)  # a point and multipliers
    gap = restricted_gap(rows, lam, weight, w_star, alpha_star, index, gradient)
    pull = gradient + rows.weighted_sum_of(index, np.clip(alpha_star, 0, weight))
    residual = lam * w_star - pull
    slack = (weight * np.maximum(0, 1 - rows.margins_of(index, w_star))
             - np.clip(alpha_star, 0, weight) * (1 - rows.margins_of(index, w_star)))
    assert gap == pytest.approx(residual @ residual / (2 * lam) + slack.sum(), rel=1e-12)
    assert gap >= 0


@pytest.mark.slow
def test_stalled_box_duals_are_accepted_only_when_certified_and_match_clarabel(monkeypatch):
    """Figure 4's trial 0 (degree-1 data, the 375 tuning samples), RBF kernel MOM with gamma 5 on
    a half-decade lam path: at the smallest lam the box dual stalls on restricted QPs of about
    100-200 rows. Their polished points are taken when certified (the others still go to
    Clarabel), and the path ends where the path with every stalled QP sent to Clarabel ends."""
    seed = np.random.SeedSequence(entropy=104, spawn_key=(0, 0, 0))
    data = generate_knapsack(500, 0, degree=1, eps_bar=0.0, feature_low=-1.0, seed=seed)
    solution = data.lp.solve(data.train.C)
    train, _ = validation_split(500, 0.25, 0)
    fit = dict(lp=data.lp.subset(train), basis=solution.basis[train])
    original = hinge_working_set._polished_stall
    outcomes = []

    def recorded(*args, **kwargs):
        found = original(*args, **kwargs)
        outcomes.append(found is not None)
        return found

    lams = [float(v) for v in np.logspace(-6, -4, 5)]
    monkeypatch.setattr(hinge_working_set, "_polished_stall", recorded)
    rescued = [KernelMOM(kernel="rbf", gamma=5.0, lam=lam) for lam in lams]
    KernelMOM.fit_many(rescued, data.train.Z[train], solution.x[train], **fit)
    assert any(outcomes)  # the path this test is about was taken

    monkeypatch.setattr(hinge_working_set, "_polished_stall", lambda *args, **kwargs: None)
    clarabel = [KernelMOM(kernel="rbf", gamma=5.0, lam=lam) for lam in lams]
    KernelMOM.fit_many(clarabel, data.train.Z[train], solution.x[train], **fit)
    for ours, reference in zip(rescued, clarabel):
        assert ours.objective_ <= reference.objective_ * (1 + 1e-8)
        assert ours.objective_ == pytest.approx(reference.objective_, rel=1e-7)
