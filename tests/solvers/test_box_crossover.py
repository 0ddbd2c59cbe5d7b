"""The box dual's crossover: the interior-point method (`interior_point.box_qp`) hands its
iterate's guess of the active sets to `box_active_set.solve_on_guessed_sets`, and the point is
kept only when its gap certifies it. Checked against cvxpy and on kernel MOM grids."""

import cvxpy as cp
import numpy as np
import pytest

import mom_pipeline.solvers.hinge_working_set as hinge_working_set
from mom_pipeline.methods.kernels import KernelMOM
from mom_pipeline.methods.mom import mom_objective, solve_hinge_qp_cvxpy
from mom_pipeline.methods.mom_problem import kkt_certificate, operators_of_bases
from mom_pipeline.problems import generate_knapsack
from mom_pipeline.solvers.box_active_set import solve_on_guessed_sets
from mom_pipeline.solvers.interior_point import box_gap, box_qp


def _few_free_rows(seed: int, k: int = 300, rank: int = 40, upper: float = 0.01):
    """A box QP whose optimum has most rows at a bound (as MOM's large working sets: 10-40 free of
    600-2,400), with its cvxpy optimum."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(k, rank))
    Q = A @ A.T / rank
    c = rng.normal(scale=0.3, size=k) - 0.1
    a = cp.Variable(k)
    problem = cp.Problem(cp.Minimize(0.5 * cp.quad_form(a, cp.psd_wrap(Q)) + c @ a), [a >= 0, a <= upper])
    problem.solve(solver=cp.CLARABEL)
    return Q, c, upper, float(problem.value)


def _objective(Q, c, a) -> float:
    return float(0.5 * a @ Q @ a + c @ a)


def _certified_crossover(Q, c, upper, tries: list):
    """The crossover as MOM's box dual uses it: kept when the gap is below 1e-9 of the objective."""
    def crossover(status):
        found = solve_on_guessed_sets(Q, c, upper, status)
        ok = found is not None and box_gap(Q, c, upper, found[0]) <= 1e-9 * abs(_objective(Q, c, found[0]))
        tries.append(ok)
        return found[0] if ok else None

    return crossover


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)])
def test_crossover_ends_at_the_optimum(seed):
    Q, c, upper, f_ref = _few_free_rows(seed)
    tries = []
    a = box_qp(Q, c, upper, gap_tol=1e-12, crossover=_certified_crossover(Q, c, upper, tries)).solution
    assert tries and tries[-1]  # the crossover gave the answer
    free = np.count_nonzero((a > 1e-9 * upper) & (a < (1 - 1e-9) * upper))
    assert free < 0.25 * c.size  # few free rows, as in MOM's working sets
    f = _objective(Q, c, a)
    assert f == pytest.approx(f_ref, rel=1e-7)
    assert f <= f_ref + 1e-9 * abs(f_ref)
    plain = box_qp(Q, c, upper, gap_tol=1e-12).solution
    assert f == pytest.approx(_objective(Q, c, plain), rel=1e-8)


@pytest.mark.slow
def test_guessed_sets_give_the_optimum_only_when_the_bounds_are_right():
    Q, c, upper, f_ref = _few_free_rows(3)
    a = box_qp(Q, c, upper, gap_tol=1e-13).solution
    status = np.where(a <= 1e-9 * upper, -1, np.where(a >= (1 - 1e-9) * upper, 1, 0))
    rng = np.random.default_rng(0)
    # extra rows guessed free (the interior-point iterate's guess holds a superset): still optimal
    superset = status.copy()
    superset[rng.choice(np.flatnonzero(status != 0), 20, replace=False)] = 0
    found, gradient = solve_on_guessed_sets(Q, c, upper, superset)
    np.testing.assert_allclose(gradient, Q @ found + c, rtol=1e-10, atol=1e-12)
    assert box_gap(Q, c, upper, found) <= 1e-9 * abs(f_ref)
    assert _objective(Q, c, found) == pytest.approx(f_ref, rel=1e-7)
    # one bound row on the wrong bound: a point the gap rejects
    wrong = status.copy()
    row = np.flatnonzero(status == 1)[0]
    wrong[row] = -1
    found, _ = solve_on_guessed_sets(Q, c, upper, wrong)
    assert box_gap(Q, c, upper, found) > 1e-6 * abs(f_ref)


@pytest.fixture(scope="module")
def knapsack():
    trial = generate_knapsack(100, 0, degree=2, feature_low=-1.0, seed=21)  # box duals of 100-500 rows
    solution = trial.lp.solve(trial.train.C)
    return trial, solution, operators_of_bases(trial.lp.A, solution.basis)


@pytest.mark.slow
def test_kernel_mom_grid_with_the_crossover_equals_cvxpy(knapsack, monkeypatch):
    """An RBF cell over lam 1e-6..1e2 whose box duals end by the crossover: every lam certified by
    the KKT gap, sampled lams at cvxpy's optimum. One gamma: its box duals reach the crossover at
    7 of the 9 lams, and the cvxpy references are the test's cost (a second gamma doubled it)."""
    trial, solution, M = knapsack
    accepted = []
    original = hinge_working_set.solve_on_guessed_sets

    def recorded(Q, c, upper, status):
        found = original(Q, c, upper, status)
        accepted.append(found is not None and box_gap(Q, c, upper, found[0]) <= 1e-9)
        return found

    monkeypatch.setattr(hinge_working_set, "solve_on_guessed_sets", recorded)
    Z = trial.train.Z
    lams = [float(v) for v in np.logspace(-6, 2, 9)]
    models = KernelMOM.fit_many([KernelMOM(kernel="rbf", gamma=2.0, lam=lam) for lam in lams],
                                Z, solution.x, lp=trial.lp, basis=solution.basis)
    assert any(accepted)
    for model in models:
        features = model.transform(Z) @ model.row_space_
        assert kkt_certificate(model.mom_.coef_, M, features, model.lam)["relative_gap"] <= 1e-7
        if model.lam in (1e-4, 1e-2, 1.0):
            reference, _ = solve_hinge_qp_cvxpy(M, features, model.lam)
            f_ref = mom_objective(reference, M, features, model.lam)
            assert model.objective_ <= f_ref * (1 + 1e-6)
            assert model.objective_ == pytest.approx(f_ref, rel=1e-6)
