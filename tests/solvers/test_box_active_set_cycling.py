"""Rows that cycle between sets in the active-set box QP (`solvers.box_active_set`): settled by the
small box QP over them (`_settle_cycling_rows`), checked against the interior-point method and
cvxpy."""

import numpy as np
import pytest

import mom_pipeline.solvers.box_active_set as box_active_set
from mom_pipeline.methods.kernels import KernelMOM
from mom_pipeline.methods.mom import mom_objective, solve_hinge_qp_cvxpy
from mom_pipeline.methods.mom_problem import kkt_certificate, operators_of_bases
from mom_pipeline.problems import generate_knapsack
from mom_pipeline.solvers.box_active_set import FreeBlock, matrix_blocks
from mom_pipeline.solvers.interior_point import box_qp

LAMBDAS = [float(v) for v in np.logspace(-6, 2, 9)]


def _box_problem(seed: int, k: int = 80, rank: int = 120, upper: float = 0.3):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(k, rank))
    return A @ A.T / rank, rng.normal(size=k), upper


def test_free_block_solves_several_right_hand_sides_at_once():
    Q, _, _ = _box_problem(0, k=60, rank=80)
    block = FreeBlock(matrix_blocks(Q), 60, np.arange(40))
    free = np.r_[np.arange(4, 40), np.arange(44, 50)]  # 4 rows left the base, 6 joined
    rhs = np.random.default_rng(1).normal(size=(free.size, 3))
    expected = np.linalg.solve(Q[np.ix_(free, free)], rhs)
    np.testing.assert_allclose(block.solve(free, rhs), expected, rtol=1e-9, atol=1e-12)
    for column in range(3):  # and column by column, as before
        np.testing.assert_allclose(block.solve(free, rhs[:, column]), expected[:, column], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_settled_rows_get_the_optimums_sets(seed):
    """With every other row in its optimal set, the rows to settle get theirs too, whatever
    sets they had (all three kinds of row among them)."""
    Q, c, upper = _box_problem(seed)
    a = box_qp(Q, c, upper, tol=1e-12).solution
    at_lower, at_upper = a <= 1e-8 * upper, a >= (1 - 1e-8) * upper
    free = ~at_lower & ~at_upper
    rng = np.random.default_rng(seed)
    cycling = np.zeros(c.size, dtype=bool)
    for kind in (at_lower, at_upper, free):
        assert kind.sum() >= 3
        cycling[rng.choice(np.flatnonzero(kind), 3, replace=False)] = True
    wrong_lower, wrong_upper = at_lower.copy(), at_upper.copy()
    wrong_lower[cycling], wrong_upper[cycling] = at_upper[cycling], free[cycling]  # every settled row wrong
    lower, upper_set, _ = box_active_set._settle_cycling_rows(Q, c, upper, matrix_blocks(Q), None, wrong_lower,
                                                              wrong_upper, cycling)
    np.testing.assert_array_equal(lower, at_lower)
    np.testing.assert_array_equal(upper_set, at_upper)


@pytest.fixture(scope="module")
def knapsack():
    trial = generate_knapsack(50, 0, degree=1, feature_low=-1.0, seed=21)
    solution = trial.lp.solve(trial.train.C)
    return trial, solution, operators_of_bases(trial.lp.A, solution.basis)


@pytest.mark.slow
def test_kernel_mom_path_with_settled_rows_equals_cvxpy(knapsack, monkeypatch):
    """A narrow RBF cell (squared norm, gamma 0.5: rows cycle there) with the settling used from
    100 rows on instead of 1000: the settling runs, and every lam ends where the path without it
    ends, at cvxpy's optimum and certified by the KKT gap."""
    trial, solution, M = knapsack
    Z = trial.train.Z

    def fit():
        return KernelMOM.fit_many([KernelMOM(kernel="rbf", gamma=0.5, lam=lam) for lam in LAMBDAS], Z, solution.x,
                                  lp=trial.lp, basis=solution.basis)

    without = fit()  # 50 samples: every box QP is below LARGE_BOX_ROWS
    settled = []
    original = box_active_set._settle_cycling_rows

    def recorded(*args, **kwargs):
        result = original(*args, **kwargs)
        settled.append(result is not None)
        return result

    monkeypatch.setattr(box_active_set, "_settle_cycling_rows", recorded)
    monkeypatch.setattr(box_active_set, "LARGE_BOX_ROWS", 100)
    models = fit()
    assert any(settled)
    features = models[0].transform(Z) @ models[0].row_space_
    for model, reference_model in zip(models, without):
        assert model.objective_ == pytest.approx(reference_model.objective_, rel=1e-8)
        assert kkt_certificate(model.mom_.coef_, M, features, model.lam)["relative_gap"] <= 1e-7
        if model.lam in (1e-5, 1e-3, 1e-1):
            reference, _ = solve_hinge_qp_cvxpy(M, features, model.lam)
            f_ref = mom_objective(reference, M, features, model.lam)
            assert model.objective_ == pytest.approx(f_ref, rel=1e-6)
            assert model.objective_ <= f_ref * (1 + 1e-8)
