"""Grids fitted together (a regularization path, one kernel per cell) end where separate fits do:
checked against cvxpy on sampled cells, with the KKT certificate, and kernel ridge against a
direct solve."""

import numpy as np
import pytest

from mom_pipeline.methods.baselines import KernelRidgeCost
from mom_pipeline.methods.kernels import KernelMOM
from mom_pipeline.methods.mom import MOM, mom_objective, solve_hinge_qp_cvxpy
from mom_pipeline.methods.mom_problem import kkt_certificate, operators_of_bases
from mom_pipeline.problems import generate_knapsack, generate_shortest_path
from mom_pipeline.solvers import path_warm_start
from mom_pipeline.solvers.policy import adaptive_working_set

LAMBDAS = list(np.logspace(-6, 2, 9))


@pytest.fixture(scope="module", params=["knapsack", "shortest_path"])
def trial(request):
    if request.param == "knapsack":  # the figures' U[-1,1] features: not separable at degree 4
        trial = generate_knapsack(40, 0, degree=4, feature_low=-1.0, seed=5)
    else:
        trial = generate_shortest_path(40, 0, degree=4, eps_bar=0.5, seed=5)
    solution = trial.lp.solve(trial.train.C)
    return trial, solution


def test_mom_path_equals_cvxpy_on_every_lambda(trial, monkeypatch):
    # Linear MOM is below the policy's size for warm starts: force them to check them exact here too.
    monkeypatch.setattr("mom_pipeline.solvers.policy.path_warm_start", lambda n_vars, n_rows: True)
    trial, solution = trial
    Z = trial.train.Z
    models = MOM.fit_many([MOM(lam=lam) for lam in LAMBDAS], Z, solution.x, lp=trial.lp, basis=solution.basis)
    M = operators_of_bases(trial.lp.A, solution.basis)
    for model in models:
        reference, _ = solve_hinge_qp_cvxpy(M, Z, model.lam)
        f_ref = mom_objective(reference, M, Z, model.lam)
        assert model.objective_ == pytest.approx(f_ref, rel=1e-6)
        assert model.objective_ >= f_ref * (1 - 1e-6)  # never better than the optimum
        assert model.solver_info_["path"] in ("active_set", "warm_working_set", "cold")
        assert kkt_certificate(model.coef_, M, Z, model.lam)["relative_gap"] <= 1e-6
    assert "warm_working_set" in {model.solver_info_["path"] for model in models}  # the warm start is exercised


def test_mom_fit_many_fits_other_configurations_one_by_one(trial):
    trial, solution = trial
    Z = trial.train.Z
    ball, reference = MOM.fit_many([MOM(lam=1e-2, radius=0.5), MOM(lam=1e-2)], Z, solution.x, lp=trial.lp,
                                   basis=solution.basis)
    alone = MOM(lam=1e-2, radius=0.5).fit(Z, solution.x, lp=trial.lp, basis=solution.basis)
    np.testing.assert_allclose(ball.coef_, alone.coef_, rtol=1e-9, atol=1e-12)
    # the ball model is solved alone (working set), the other on the regularization path
    assert ball.solver_info_["path"] == "working_set"
    assert reference.solver_info_["path"] in ("active_set", "warm_working_set", "cold")
    with pytest.raises(ValueError, match="'lam' parameter of MOM must be"):
        MOM.fit_many([MOM(lam=0.0)], Z, solution.x, lp=trial.lp, basis=solution.basis)
    first = MOM(lam=1e-2)  # a grid with one bad value: nothing is fitted
    with pytest.raises(ValueError, match="'tol' parameter of MOM must be"):
        MOM.fit_many([first, MOM(lam=1e-2, tol=-1.0)], Z, solution.x, lp=trial.lp, basis=solution.basis)
    assert not hasattr(first, "coef_")


@pytest.fixture(scope="module")
def small_knapsack():
    trial = generate_knapsack(25, 0, degree=4, feature_low=-1.0, seed=6)
    return trial, trial.lp.solve(trial.train.C)


@pytest.mark.parametrize("kernel, cells, rbf_norm", [
    ("poly", [(1, 0.1, 1e-6), (4, 5.0, 1e-2), (3, 0.5, 1.0)], "squared"),
    ("rbf", [(2, 0.1, 1e-4), (2, 5.0, 1.0)], "squared"),
    # the figures' RBF kernel (at lam = 1e-6 the narrow cells are hard-margin, objective ~5e-5, and
    # Clarabel's reference stops 8e-5 above the fast optimum: not a reference there)
    ("rbf", [(2, 0.1, 1e-4), (2, 0.5, 1e-2), (2, 5.0, 1e-6)], "unsquared"),
])
def test_kernel_mom_grid_equals_cvxpy_on_sampled_cells(small_knapsack, kernel, cells, rbf_norm):
    trial, solution = small_knapsack
    Z = trial.train.Z
    grid = [KernelMOM(kernel=kernel, degree=degree, gamma=gamma, lam=lam, rbf_norm=rbf_norm)
            for degree, gamma, _ in cells for lam in LAMBDAS[::2]]
    KernelMOM.fit_many(grid, Z, solution.x, lp=trial.lp, basis=solution.basis)
    M = operators_of_bases(trial.lp.A, solution.basis)
    sampled = [model for model in grid if any(
        (model.degree, model.gamma) == (degree, gamma) and np.isclose(model.lam, lam) for degree, gamma, lam in cells)]
    assert len(sampled) == len(cells)
    for model in sampled:
        features = model.transform(Z) @ model.row_space_
        reference, _ = solve_hinge_qp_cvxpy(M, features, model.lam)
        f_ref = mom_objective(reference, M, features, model.lam)
        assert model.objective_ == pytest.approx(f_ref, rel=1e-6)
        # The same objective in kernel-feature space, from coef_ (the model that predicts).
        assert mom_objective(model.coef_, M, model.transform(Z), model.lam) == pytest.approx(f_ref, rel=1e-6)
        single = KernelMOM(kernel=kernel, degree=model.degree, gamma=model.gamma, lam=model.lam,
                           rbf_norm=rbf_norm).fit(
            Z, solution.x, lp=trial.lp, basis=solution.basis)
        assert single.objective_ == pytest.approx(model.objective_, rel=1e-6)


@pytest.mark.parametrize("kernel, cells", [("poly", [dict(degree=d, gamma=g) for d in (1, 3) for g in (0.5, 4.0)]),
                                           ("rbf", [dict(gamma=g) for g in (0.1, 2.0)])])
def test_kernel_ridge_grid_equals_direct_solves(trial, kernel, cells):
    trial, _ = trial
    Z, C, Z_new = trial.train.Z, trial.train.C, trial.train.Z[:7] + 0.05
    grid = [KernelRidgeCost(kernel=kernel, lam=lam, **cell) for cell in cells for lam in (1e-4, 1e-2, 1.0, 100.0)]
    KernelRidgeCost.fit_many(grid, Z, C=C)
    for model in grid:
        K = model._kernel(Z, Z)
        dual = np.linalg.solve(K + model.lam * np.eye(len(Z)), C)
        expected = model._kernel(Z_new, Z) @ dual
        scale = np.abs(expected).max()
        np.testing.assert_allclose(model.predict_cost(Z_new), expected, rtol=1e-6, atol=1e-6 * scale)


@pytest.mark.slow
@pytest.mark.parametrize("degree, gamma", [(4, 0.5), (3, 4.0)])
def test_kernel_mom_path_at_small_lambda_equals_cvxpy(degree, gamma):
    """The figures' hot spot: polynomial kernels of degree 2-4 down to lam = 1e-6 (nearly hard
    margin), solved as one path with the adaptive working set (policy.adaptive_working_set)."""
    trial = generate_knapsack(60, 0, degree=4, feature_low=-1.0, seed=11)
    solution = trial.lp.solve(trial.train.C)
    Z = trial.train.Z
    models = KernelMOM.fit_many([KernelMOM(kernel="poly", degree=degree, gamma=gamma, lam=lam) for lam in LAMBDAS],
                                Z, solution.x, lp=trial.lp, basis=solution.basis)
    M = operators_of_bases(trial.lp.A, solution.basis)
    features = models[0].transform(Z) @ models[0].row_space_
    # solved on the costs the reduced costs see (n - rank(A) of n: mom_solve.cost_subspace)
    costs = trial.lp.n - np.linalg.matrix_rank(trial.lp.A)
    assert adaptive_working_set(costs * features.shape[1])
    for model in models:
        assert kkt_certificate(model.mom_.coef_, M, features, model.lam)["relative_gap"] <= 1e-7
        if model.lam <= 1e-4:
            reference, _ = solve_hinge_qp_cvxpy(M, features, model.lam)
            f_ref = mom_objective(reference, M, features, model.lam)
            assert model.objective_ == pytest.approx(f_ref, rel=1e-6)
            assert model.objective_ <= f_ref * (1 + 1e-8)
    assert any(model.solver_info_.get("dropped_rows", 0) > 0 for model in models)  # the shrinking is exercised


def test_path_warm_start_policy_is_by_size():
    # unknowns on the cost subspace (mom_solve.cost_subspace): 10 of the knapsack's 21 costs,
    # 16 of the shortest path's 40 arcs
    assert path_warm_start(10 * 70, 3750)  # polynomial kernel MOM, degree 4
    assert path_warm_start(10 * 15, 3750) and adaptive_working_set(10 * 15)  # degree 2
    assert not adaptive_working_set(10 * 5)  # linear MOM, knapsack
    assert not path_warm_start(16 * 6, 16000)  # linear MOM, shortest path


def test_a_diverging_spo_plus_cell_leaves_the_lockstep_alone(monkeypatch):
    from mom_pipeline.methods.baselines import SPOPlus
    from mom_pipeline.methods.tuning import grid_search

    trial = generate_knapsack(40, 0, degree=2, feature_low=-1.0, seed=7)
    Z, C = trial.train.Z, trial.train.C
    X = trial.lp.solve(C).x
    cells = [dict(lam=lam, step_size=step) for lam in (1e-6, 100.0) for step in (1e-2, 10.0)]
    together = SPOPlus.fit_many([SPOPlus(n_steps=200, **c) for c in cells], Z, X, lp=trial.lp, C=C)
    for cell, model in zip(cells, together):
        if cell == dict(lam=100.0, step_size=10.0):  # 1 - 10 * 100 / sqrt(k + 1): overflows
            assert isinstance(model.fit_error_, FloatingPointError) and not hasattr(model, "coef_")
            with pytest.raises(FloatingPointError, match="diverged"):
                SPOPlus(n_steps=200, **cell).fit(Z, X, lp=trial.lp, C=C)
        else:
            alone = SPOPlus(n_steps=200, **cell).fit(Z, X, lp=trial.lp, C=C)
            np.testing.assert_array_equal(model.coef_, alone.coef_)
    # In a grid search the diverging cell gets its own error and the rest stay fitted together.
    calls = []
    original = SPOPlus.fit

    def counted(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SPOPlus, "fit", counted)
    result = grid_search(lambda **p: SPOPlus(n_steps=200, **p), {"lam": [1e-6, 100.0], "step_size": [1e-2, 10.0]},
                         Z, X, trial.lp, C, basis=None, problem="knapsack", on_error="nan")
    errors = result.scores["error"].dropna()
    assert len(errors) == 1 and "diverged" in errors.iloc[0]
    assert len(calls) == 1  # only the refit of the best cell: the grid itself was one joint fit


def test_box_gap_bounds_the_suboptimality():
    from mom_pipeline.solvers.interior_point import box_gap, box_qp

    rng = np.random.default_rng(0)
    G = rng.normal(size=(30, 12))
    Q, c, upper = G @ G.T, rng.normal(size=30), 0.3
    best = box_qp(Q, c, upper, tol=1e-12).solution
    f = lambda a: 0.5 * a @ Q @ a + c @ a  # noqa: E731
    assert box_gap(Q, c, upper, best) <= 1e-8
    for _ in range(5):
        a = rng.uniform(0, upper, size=30)
        assert box_gap(Q, c, upper, a) >= f(a) - f(best) - 1e-12


@pytest.mark.slow
def test_kernel_mom_on_the_box_dual_path_equals_cvxpy():
    from mom_pipeline.solvers import restricted_qp_method

    trial = generate_knapsack(60, 0, degree=4, feature_low=-1.0, seed=8)
    solution = trial.lp.solve(trial.train.C)
    Z = trial.train.Z
    models = KernelMOM.fit_many([KernelMOM(kernel="rbf", gamma=0.5, lam=lam) for lam in (1e-6, 1e-3)], Z, solution.x,
                                lp=trial.lp, basis=solution.basis)
    features = models[0].transform(Z) @ models[0].row_space_
    n_vars = trial.lp.n * features.shape[1]
    assert n_vars > 1000 and restricted_qp_method(n_vars, n_vars - 1, ball=False) == "box_dual"
    M = operators_of_bases(trial.lp.A, solution.basis)
    for model in models:
        reference, _ = solve_hinge_qp_cvxpy(M, features, model.lam)
        f_ref = mom_objective(reference, M, features, model.lam)
        # Never worse than the reference; at lam = 1e-6 (objective 7e-5) Clarabel's default
        # accuracy stops about 1e-5 above the optimum, so optimality is certified by the gap.
        assert model.objective_ <= f_ref * (1 + 1e-6)
        certificate = kkt_certificate(model.mom_.coef_, M, features, model.lam)
        assert certificate["gap"] <= 1e-6 * certificate["objective"]
