"""Certificates of the working-set method's solutions at tiny lam, and the solves they guard:
the QR-factored Newton systems of the primal interior-point method, its stalled iterates taken
only when multipliers fitted to them certify them, and the margin polish of every grid point
below `POLISH_BELOW_LAM` that its solver's multipliers do not certify."""

import cvxpy as cp
import numpy as np
import pytest

import mom_pipeline.solvers.hinge_working_set as hinge_working_set
from mom_pipeline.methods.kernels import KernelMOM
from mom_pipeline.methods.mom_problem import MOMHingeRows
from mom_pipeline.methods.tuning import validation_split
from mom_pipeline.problems import generate_knapsack
from mom_pipeline.solvers.dense_cholesky import cho_factor_gram, cho_solve_factor, qr_factor_gram
from mom_pipeline.solvers.margin_polish import margin_multipliers, restricted_gap, restricted_objective


def _figure4_trial0(degree: int):
    """Figure 4's trial 0 tuning data (U[-1,1]^4 features, the 375 samples of the validation
    split): (Z, X*, fit keyword arguments)."""
    seed = np.random.SeedSequence(entropy=104, spawn_key=([1, 2, 4, 6].index(degree), 0, 0))
    data = generate_knapsack(500, 0, degree=degree, eps_bar=0.0, feature_low=-1.0, seed=seed)
    solution = data.lp.solve(data.train.C)
    train, _ = validation_split(500, 0.25, 0)
    return data.train.Z[train], solution.x[train], dict(lp=data.lp.subset(train), basis=solution.basis[train])


def test_qr_factor_gram_is_the_cholesky_factor_of_the_gram_matrix():
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(40, 7))
    rhs = rng.normal(size=7)
    expected = np.linalg.solve(rows.T @ rows + 0.3 * np.eye(7), rhs)
    assert np.allclose(cho_solve_factor(qr_factor_gram(rows, 0.3), rhs), expected, rtol=1e-10)
    assert np.allclose(cho_solve_factor(cho_factor_gram(rows, 0.3), rhs), expected, rtol=1e-10)
    with pytest.raises(np.linalg.LinAlgError):
        qr_factor_gram(np.zeros((5, 3)), 0.0)


def test_qr_factor_gram_factors_what_the_gram_matrix_cannot():
    """Rows weighted from 1e-8 to 1e4 and a shift of 1e-14, as a hinge interior-point system near
    a tiny-lam optimum: the formed Gram matrix is numerically indefinite, the stacked rows are not."""
    rng = np.random.default_rng(1)
    p = 20
    rows = rng.normal(size=(60, p)) * np.logspace(-8, 4, 60)[:, None]
    rows[:, -1] = rows[:, 0] * (1 + 1e-13)  # two nearly parallel columns
    with pytest.raises(np.linalg.LinAlgError):
        cho_factor_gram(rows, 1e-14)
    R, _ = qr_factor_gram(rows, 1e-14)
    gram = rows.T @ rows + 1e-14 * np.eye(p)
    assert np.allclose(R.T @ R, gram, rtol=0, atol=1e-10 * np.abs(gram).max())


def test_margin_multipliers_certify_an_optimum_and_not_a_moved_point():
    rng = np.random.default_rng(2)
    rows = MOMHingeRows(rng.normal(size=(40, 3, 5)), rng.normal(size=(40, 2)))
    index, gradient, weight, lam = np.arange(rows.n_rows), np.zeros(rows.n_vars), 1.0 / 40, 1e-3
    H = rows.dense_rows(index)
    w = cp.Variable(rows.n_vars)
    problem = cp.Problem(cp.Minimize(0.5 * lam * cp.sum_squares(w) + weight * cp.sum(cp.pos(1 - H @ w))))
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    w_star = hinge_working_set.polish_margin_rows(rows, lam, weight, w.value)
    gap = restricted_gap(rows, lam, weight, w_star,
                         margin_multipliers(rows, lam, weight, w_star, index, gradient, 1e-9), index, gradient)
    optimum = restricted_objective(rows, lam, weight, w_star)
    assert 0 <= gap <= 1e-9 * optimum
    moved = w_star + 1e-2 * rng.normal(size=w_star.size)
    error = restricted_objective(rows, lam, weight, moved) - optimum
    assert error > 0
    alpha = margin_multipliers(rows, lam, weight, moved, index, gradient, 1e-9)
    assert restricted_gap(rows, lam, weight, moved, alpha, index, gradient) >= error


@pytest.mark.slow
@pytest.mark.parametrize("kernel, params, lam", [
    ("poly", dict(degree=3), 1e-4),
])
def test_grid_points_below_the_polish_threshold_are_certified_and_reach_cvxpy(kernel, params, lam):
    """Figure 4's trial 0 (degree-1 data): polynomial degree 3 over its seven gammas and nine lam,
    one `fit_many` as a tuning grid runs it. Before grid points were polished up to scaled lam
    1e-9, gamma 5 at lam 1e-4 (scaled 2e-12) ended 1.3e-7 above cvxpy's point. Now every grid
    point is certified by multipliers fitted to it, and that cell is at or below cvxpy."""
    Z, X, fit = _figure4_trial0(1)
    gammas, lams = [0.1, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0], [float(v) for v in np.logspace(-6, 2, 9)]
    models = [KernelMOM(kernel=kernel, gamma=g, lam=value, **params) for g in gammas for value in lams]
    KernelMOM.fit_many(models, Z, X, **fit)
    chosen = next(m for m in models if m.gamma == 5.0 and m.lam == lam)
    reference = KernelMOM(kernel=kernel, gamma=5.0, lam=lam, solver="cvxpy", **params).fit(Z, X, **fit)
    assert chosen.objective_ <= reference.objective_ * (1 + 1e-8)
    assert chosen.objective_ == pytest.approx(reference.objective_, rel=1e-6)
