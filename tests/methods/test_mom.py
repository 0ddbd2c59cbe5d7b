"""Offline MOM: the fast solver against cvxpy, the dual formulation against its own cvxpy
build, and the paper's properties (separable data, scale invariance, Proposition 3)."""

import cvxpy as cp
import numpy as np
import pytest
from sklearn.base import clone

from mom_pipeline.lp import reduced_cost_operator, solve_lp_batch
from mom_pipeline.methods.base import NotFittedError
from mom_pipeline.methods.mom import (
    MOM,
    hinge_rows,
    mom_hinge_loss,
    mom_objective,
    optimality_margins,
    solve_hinge_qp,
    solve_hinge_qp_cvxpy,
    support_mask,
)
from mom_pipeline.problems import generate_knapsack, generate_shortest_path

LAMBDAS = (1e-6, 1e-3, 1e0, 1e2)


def _problem(name: str, n_train: int, seed: int = 0):
    """A small inseparable trial, its observed optimal solutions and the MOM operators."""
    if name == "shortest_path":
        trial = generate_shortest_path(n_train, 0, degree=4, eps_bar=0.5, seed=seed)
    else:
        trial = generate_knapsack(n_train, 0, degree=2, eps_bar=0.5, eta_bar=1.0, seed=seed)
    X = trial.lp.solve(trial.train.C).x
    M, _ = reduced_cost_operator(trial.lp.A, trial.lp.basis_from_solution(X))
    return trial, X, M


@pytest.fixture(scope="module", params=["shortest_path", "knapsack"])
def problem(request):
    return _problem(request.param, 80)


def test_hinge_rows_give_the_reduced_costs_of_theta_z(problem):
    trial, _, M = problem
    Z = trial.train.Z
    Theta = np.random.default_rng(1).normal(size=(M.shape[2], Z.shape[1]))
    expected = np.stack([M[t] @ Theta @ Z[t] for t in range(len(Z))])  # per-sample loop
    H = hinge_rows(M, Z)
    np.testing.assert_allclose(H @ Theta.ravel(), expected.ravel(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(hinge_rows(M, Z, sparse=True).toarray(), H, rtol=0, atol=0)
    np.testing.assert_allclose(optimality_margins(Theta, M, Z), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lam", LAMBDAS)
def test_fast_solver_matches_cvxpy(problem, lam):
    trial, X, M = problem
    Z = trial.train.Z
    reference, info = solve_hinge_qp_cvxpy(M, Z, lam)
    f_ref = mom_objective(reference, M, Z, lam)
    assert f_ref == pytest.approx(info["solver_objective"], rel=1e-6)
    model = MOM(lam=lam).fit(Z, X, lp=trial.lp)
    assert model.objective_ == pytest.approx(f_ref, rel=1e-6)
    # The fast solution is feasible and optimal, so it cannot be better by more than the tolerance.
    assert model.objective_ >= f_ref * (1 - 1e-6)
    cvx_model = MOM(lam=lam, solver="cvxpy").fit(Z, X, lp=trial.lp)
    assert cvx_model.objective_ == pytest.approx(f_ref, rel=1e-9)


@pytest.mark.parametrize("lam", LAMBDAS)
def test_fast_solver_matches_cvxpy_with_the_ball(problem, lam):
    trial, X, M = problem
    Z = trial.train.Z
    free = MOM(lam=lam).fit(Z, X, lp=trial.lp).coef_
    radius = 0.5 * np.linalg.norm(free)  # binding: half the unconstrained norm
    reference, _ = solve_hinge_qp_cvxpy(M, Z, lam, radius=radius)
    model = MOM(lam=lam, radius=radius).fit(Z, X, lp=trial.lp)
    assert np.linalg.norm(model.coef_) <= radius * (1 + 1e-7)
    assert model.objective_ == pytest.approx(mom_objective(reference, M, Z, lam), rel=1e-6)


def test_fast_solver_from_a_poor_warm_start_stays_exact(problem):
    trial, _, M = problem
    Z = trial.train.Z
    lam = 1e-4
    reference, _ = solve_hinge_qp_cvxpy(M, Z, lam)
    w0 = np.random.default_rng(3).normal(size=M.shape[2] * Z.shape[1])
    Theta, info = solve_hinge_qp(M, Z, lam, w0=w0)
    assert mom_objective(Theta, M, Z, lam) == pytest.approx(mom_objective(reference, M, Z, lam), rel=1e-6)
    assert info["iterations"] >= 1


def _dual_formulation_cvxpy(A, X, Z, lam):
    """Independent build: a Python loop over samples with cvxpy variables y_t."""
    T, d = Z.shape
    m, n = A.shape
    Theta = cp.Variable((n, d))
    y = cp.Variable((T, m))
    support = support_mask(X)
    hinge = []
    constraints = []
    for t in range(T):
        reduced = Theta @ Z[t] - A.T @ y[t]
        on, off = np.flatnonzero(support[t]), np.flatnonzero(~support[t])
        constraints.append(reduced[on] == 0)
        s = cp.Variable(off.size, nonneg=True)
        constraints.append(reduced[off] >= 1 - s)
        hinge.append(cp.sum(s))
    problem = cp.Problem(cp.Minimize(0.5 * lam * cp.sum_squares(Theta) + sum(hinge) / T), constraints)
    # Tight tolerances: at lam = 1e-6 the optimum is ~1e-4, below Clarabel's default absolute gap.
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return problem.value


@pytest.mark.parametrize("name", ["shortest_path", "knapsack"])
@pytest.mark.parametrize("lam", [1e-6, 1e-4, 1e-1, 1e2])
def test_dual_formulation_matches_its_cvxpy_build(name, lam):
    trial, X, _ = _problem(name, 30, seed=2)
    Z = trial.train.Z
    model = MOM(lam=lam, formulation="dual").fit(Z, X, lp=trial.lp)
    assert model.objective_ == pytest.approx(_dual_formulation_cvxpy(trial.lp.A, X, Z, lam), rel=1e-6)
    # The equality rows hold at the returned duals.
    reduced = Z @ model.coef_.T - model.dual_ @ trial.lp.A
    assert np.abs(reduced[support_mask(X)]).max() <= 1e-6 * max(1.0, np.abs(reduced).max())


def test_dual_formulation_is_the_basis_formulation_without_degeneracy():
    trial, X, _ = _problem("knapsack", 60, seed=1)
    assert np.all(support_mask(X).sum(axis=1) == trial.lp.m)  # every x* non-degenerate
    for lam in (1e-4, 1e-1):
        dual = MOM(lam=lam, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)
        basis = MOM(lam=lam).fit(trial.train.Z, X, lp=trial.lp)
        assert dual.objective_ == pytest.approx(basis.objective_, rel=1e-6)


def test_dual_formulation_does_not_fix_a_basis_on_degenerate_paths():
    trial, X, _ = _problem("shortest_path", 40, seed=3)
    assert np.all(support_mask(X).sum(axis=1) < trial.lp.m)  # shortest paths are degenerate
    dual = MOM(lam=1e-2, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)
    assert dual.solver_info_["margin_rows"] == int((~support_mask(X)).sum())
    assert dual.coef_.shape == (trial.lp.n, trial.train.Z.shape[1])


@pytest.mark.parametrize("seed", [0, 1])
def test_separable_data_are_fitted_exactly(seed):
    trial = generate_knapsack(80, 0, degree=1, prices="uniform", seed=seed)  # c = Theta* z exactly
    Z, C = trial.train.Z, trial.train.C
    solution = trial.lp.solve(C)
    model = MOM(lam=1e-6).fit(Z, solution.x, lp=trial.lp)
    M, _ = reduced_cost_operator(trial.lp.A, trial.lp.basis_from_solution(solution.x))
    hinge = mom_hinge_loss(model.coef_, M, Z)
    assert hinge.max() < 1.0  # every optimality condition holds with a positive margin
    assert hinge.mean() < 1e-3
    decided = model.decide(Z, trial.lp).x
    np.testing.assert_allclose(np.einsum("tn,tn->t", C, decided), solution.objective,
                               rtol=1e-9, atol=1e-12)


def test_scaling_each_cost_vector_changes_nothing():
    trial = generate_shortest_path(60, 0, degree=2, eps_bar=0.5, seed=4)
    Z, C = trial.train.Z, trial.train.C
    factors = np.random.default_rng(5).uniform(0.01, 100.0, size=(len(C), 1))
    plain, scaled = trial.lp.solve(C), trial.lp.solve(C * factors)
    np.testing.assert_array_equal(plain.x, scaled.x)
    for kwargs in ({}, {"formulation": "dual"}):
        a = MOM(lam=1e-2, **kwargs).fit(Z, plain.x, lp=trial.lp, C=C)
        b = MOM(lam=1e-2, **kwargs).fit(Z, scaled.x, lp=trial.lp, C=C * factors)
        np.testing.assert_array_equal(a.coef_, b.coef_)
    a = MOM(lam=1e-2).fit(Z, lp=trial.lp, basis=plain.basis)
    b = MOM(lam=1e-2).fit(Z, lp=trial.lp, basis=scaled.basis)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.decide(Z, trial.lp).x, b.decide(Z, trial.lp).x)


@pytest.mark.parametrize("name", ["shortest_path", "knapsack"])
def test_hinge_bounds_the_suboptimality_loss(name):
    """Proposition 3: c_hat'x* - c_hat'x_hat <= ||s_t||_1 for x in [0, 1]^n (shortest path).

    In general (knapsack: its budget slack exceeds 1) the same argument gives the bound
    ||s_t||_1 * max(1, |x_hat|_inf): c_hat'x* - c_hat'x_hat = -r_N'x_hat_N.
    """
    trial, X, _ = _problem(name, 60, seed=6)
    Z = trial.train.Z
    basis = trial.lp.solve(trial.train.C).basis  # any basis of x* works; take the solver's
    M, _ = reduced_cost_operator(trial.lp.A, basis)
    rng = np.random.default_rng(7)
    fitted = MOM(lam=1e-3).fit(Z, lp=trial.lp, basis=basis).coef_
    for Theta in (fitted, rng.normal(size=fitted.shape), 0.01 * rng.normal(size=fitted.shape)):
        C_hat = Z @ Theta.T
        decided = solve_lp_batch(trial.lp.A, trial.lp.b, C_hat)  # HiGHS, independent of the oracles
        suboptimality = np.einsum("tn,tn->t", C_hat, X) - decided.objective
        hinge = mom_hinge_loss(Theta, M, Z)
        size = np.maximum(1.0, decided.x.max(axis=1))
        if name == "shortest_path":
            np.testing.assert_array_equal(size, 1.0)
        slack = 1e-9 * np.maximum(1.0, np.abs(C_hat).max(axis=1)) * size
        assert np.all(suboptimality <= hinge * size + slack)
        assert np.all(suboptimality >= -slack)  # x_hat is optimal for c_hat
        assert np.any(suboptimality > 1e-6)  # the bound is put to work


def test_c_is_ignored_and_predictions_are_linear(problem):
    trial, X, _ = problem
    Z = trial.train.Z
    a = MOM(lam=1e-2).fit(Z, X, lp=trial.lp)
    b = MOM(lam=1e-2).fit(Z, X, lp=trial.lp, C=np.full_like(X, np.nan))
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_allclose(a.predict_cost(Z), Z @ a.coef_.T)
    assert MOM.needs_costs is False
    assert clone(a).get_params() == a.get_params()
    assert a.n_iter_ >= 1 and a.solver_info_["seconds"] >= 0


def test_fit_from_a_b_matches_fit_from_lp(problem):
    trial, X, _ = problem
    Z = trial.train.Z
    a = MOM(lam=1e-2).fit(Z, X, lp=trial.lp)
    b = MOM(lam=1e-2).fit(Z, X, A=trial.lp.A, b=trial.lp.b)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-10, atol=1e-12)


def test_clear_errors():
    trial, X, _ = _problem("knapsack", 20, seed=8)
    Z, lp = trial.train.Z, trial.lp
    with pytest.raises(ValueError, match="lam"):
        MOM(lam=0.0).fit(Z, X, lp=lp)
    with pytest.raises(ValueError, match="lam"):
        MOM(lam=-1.0).fit(Z, X, lp=lp)
    with pytest.raises(ValueError, match="'solver' parameter of MOM must be a str among .*Got 'gurobi'"):
        MOM(solver="gurobi").fit(Z, X, lp=lp)
    with pytest.raises(ValueError, match="'formulation' parameter of MOM must be a str among .*Got 'primal'"):
        MOM(formulation="primal").fit(Z, X, lp=lp)
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="'lam' parameter of MOM must be a float in the range"):
            MOM(lam=bad).fit(Z, X, lp=lp)
    with pytest.raises(ValueError, match="'n_jobs' parameter of MOM"):
        MOM(n_jobs=0).fit(Z, X, lp=lp)
    with pytest.raises(ValueError, match="radius"):
        MOM(radius=0.0).fit(Z, X, lp=lp)
    with pytest.raises(ValueError, match="X_star must be"):
        MOM().fit(Z, X[:-1], lp=lp)
    with pytest.raises(ValueError, match="X_star must be"):
        MOM().fit(Z, X[:, :-1], lp=lp)
    bad_X = X.copy()
    bad_X[5, 2] = np.nan
    with pytest.raises(ValueError, match="sample 5"):
        MOM().fit(Z, bad_X, lp=lp)
    with pytest.raises(ValueError, match="sample 5"):
        MOM(formulation="dual").fit(Z, bad_X, lp=lp)
    bad_Z = Z.copy()
    bad_Z[3, 0] = np.nan
    with pytest.raises(ValueError, match="sample 3"):
        MOM().fit(bad_Z, X, lp=lp)
    with pytest.raises(ValueError, match="basis must be"):
        MOM().fit(Z, lp=lp, basis=np.zeros((len(Z), lp.m - 1), dtype=int))
    with pytest.raises(ValueError, match="X_star"):
        MOM().fit(Z, lp=lp)
    with pytest.raises(NotFittedError):
        MOM().predict_cost(Z)
    model = MOM().fit(Z, X, lp=lp)
    with pytest.raises(ValueError, match="features"):
        model.predict_cost(Z[:, :-1])


def test_a_singular_basis_names_the_sample():
    from mom_pipeline.lp import BasisError

    trial, X, _ = _problem("shortest_path", 20, seed=9)
    basis = trial.lp.solve(trial.train.C).basis.copy()
    A = trial.lp.A
    # Swap one tree edge of sample 7 for an edge that closes a cycle: A_B becomes singular.
    swaps = ((i, j) for i in range(A.shape[0]) for j in np.setdiff1d(np.arange(A.shape[1]), basis[7]))
    for i, j in swaps:
        candidate = np.sort(np.concatenate([np.delete(basis[7], i), [j]]))
        if np.linalg.matrix_rank(A[:, candidate]) < A.shape[0]:
            basis[7] = candidate
            break
    with pytest.raises(BasisError, match="sample 7"):
        MOM().fit(trial.train.Z, lp=trial.lp, basis=basis)


@pytest.mark.parametrize("rank", [5, 40])
def test_box_qp_of_the_working_set_matches_cvxpy(rank):
    from mom_pipeline.solvers import box_qp as _box_qp

    rng = np.random.default_rng(rank)
    factor = rng.normal(size=(40, rank))
    Q, c, upper = factor @ factor.T, rng.normal(size=40), 0.3
    a = _box_qp(Q, c, upper).solution
    x = cp.Variable(40)
    problem = cp.Problem(cp.Minimize(0.5 * cp.quad_form(x, cp.psd_wrap(Q)) + c @ x), [x >= 0, x <= upper])
    problem.solve(solver=cp.CLARABEL)
    assert a.min() >= 0 and a.max() <= upper
    assert 0.5 * a @ Q @ a + c @ a == pytest.approx(problem.value, rel=1e-7, abs=1e-9)


@pytest.mark.slow
def test_kernel_sized_problems_take_the_dual_working_set_path(monkeypatch):
    """Many features and few rows: the restricted QPs are solved as box QPs; still exact."""
    import mom_pipeline.solvers.hinge_working_set as mom_module

    calls = []
    box_qp = mom_module.box_qp
    monkeypatch.setattr(mom_module, "box_qp", lambda *args, **kwargs: calls.append(1) or box_qp(*args, **kwargs))
    active_set = mom_module.box_qp_active_set  # the dual box QP from a guess of its active sets
    monkeypatch.setattr(mom_module, "box_qp_active_set",
                        lambda *args, **kwargs: calls.append(1) or active_set(*args, **kwargs))
    trial, X, M = _problem("knapsack", 30, seed=10)
    Z = np.random.default_rng(11).normal(size=(30, 100))  # 21 * 100 = 2100 unknowns, 300 rows
    w0 = np.random.default_rng(12).normal(size=M.shape[2] * Z.shape[1])  # skips the active-set finish
    for lam in (1e-4, 1e-1):
        Theta, info = solve_hinge_qp(M, Z, lam, w0=w0)
        reference, _ = solve_hinge_qp_cvxpy(M, Z, lam)
        # Near-separable: the optimum is small and cvxpy's absolute gap (1e-8) dominates.
        assert mom_objective(Theta, M, Z, lam) == pytest.approx(mom_objective(reference, M, Z, lam),
                                                                rel=1e-6, abs=2e-8)
    assert calls  # the box-QP dual ran (interior point or active set)


def test_per_sample_constraints_give_the_shared_result():
    from mom_pipeline.lp import StandardFormLP

    trial, X, _ = _problem("knapsack", 25, seed=13)
    T = len(X)
    stacked = StandardFormLP(A=np.repeat(trial.lp.A[None], T, axis=0), b=np.repeat(trial.lp.b[None], T, axis=0))
    for formulation in ("basis", "dual"):
        shared = MOM(lam=1e-2, formulation=formulation).fit(trial.train.Z, X, lp=trial.lp)
        per_sample = MOM(lam=1e-2, formulation=formulation).fit(trial.train.Z, X, lp=stacked)
        assert per_sample.objective_ == pytest.approx(shared.objective_, rel=1e-7)


@pytest.mark.parametrize("lam", [1e-4, 1e-2])
def test_warm_start_with_few_curved_rows_uses_woodbury_and_stays_exact(monkeypatch, lam):
    """Kernel-sized features (p = n * d between 500 and 2000) with fewer curved rows than
    unknowns: the Newton steps of the warm start factor |Q| x |Q| systems, not p x p; the
    solution still matches cvxpy."""
    import mom_pipeline.solvers.hinge_newton as mom_module

    sizes = []
    solve_positive = mom_module.solve_positive
    monkeypatch.setattr(mom_module, "solve_positive",
                        lambda matrix, rhs: sizes.append(matrix.shape[0]) or solve_positive(matrix, rhs))
    trial, X, M = _problem("shortest_path", 40, seed=3)
    rng = np.random.default_rng(4)
    Z = np.abs(rng.normal(size=(40, 20)))  # 40 * 20 = 800 unknowns, 640 rows
    Theta, _ = solve_hinge_qp(M, Z, lam)
    reference, _ = solve_hinge_qp_cvxpy(M, Z, lam)
    assert mom_objective(Theta, M, Z, lam) == pytest.approx(mom_objective(reference, M, Z, lam), rel=1e-6, abs=2e-8)
    assert sizes and min(sizes) < M.shape[2] * Z.shape[1]


@pytest.mark.parametrize("lam", [1e-8, 1e-4, 1.0])
def test_interior_point_of_the_restricted_problem_matches_cvxpy(lam):
    """Many rows, few features (the working set of linear MOM): the p x p interior-point
    method reaches the cvxpy optimum, also with a tiny lam and a large linear pull g."""
    from mom_pipeline.solvers import hinge_qp_ipm as _hinge_qp_ipm

    rng = np.random.default_rng(int(-np.log10(lam)))
    k, p, weight = 600, 30, 1.0 / 200
    H = rng.normal(size=(k, p)) / np.sqrt(p)
    g = weight * H[:40].sum(axis=0) * 3.0  # rows assumed violated enter as a constant gradient
    w = _hinge_qp_ipm(H, g, lam, weight).solution
    x = cp.Variable(p)
    objective = 0.5 * lam * cp.sum_squares(x) - g @ x + weight * cp.sum(cp.pos(1 - H @ x))
    reference = cp.Problem(cp.Minimize(objective))
    reference.solve(solver=cp.CLARABEL)
    value = 0.5 * lam * w @ w - g @ w + weight * np.maximum(0, 1 - H @ w).sum()
    assert value <= reference.value + 1e-7 * max(1.0, abs(reference.value))
    assert value == pytest.approx(reference.value, rel=1e-6, abs=1e-9)


def test_working_sets_with_many_rows_use_the_interior_point_method(monkeypatch):
    import mom_pipeline.solvers.hinge_working_set as mom_module

    calls = []
    ipm = mom_module.hinge_qp_ipm
    monkeypatch.setattr(mom_module, "hinge_qp_ipm", lambda *args, **kwargs: calls.append(1) or ipm(*args, **kwargs))
    trial, X, M = _problem("knapsack", 300, seed=5)
    Theta, info = solve_hinge_qp(M, trial.train.Z, 1e-6)
    reference, _ = solve_hinge_qp_cvxpy(M, trial.train.Z, 1e-6)
    assert info["restricted_solves"] >= 1 and calls
    assert mom_objective(Theta, M, trial.train.Z, 1e-6) == pytest.approx(
        mom_objective(reference, M, trial.train.Z, 1e-6), rel=1e-6)


def test_box_qp_accepts_the_round_off_floor_of_a_badly_scaled_gram_matrix():
    """Q entries of 1e9 (separable kernel problems at small lam): the residual of Q a + c
    cannot fall below 1e-9, so the iterate converged up to round-off is returned instead of
    an error (which sent such problems to a 30-second Clarabel fallback); it matches cvxpy."""
    from mom_pipeline.solvers import box_qp as _box_qp

    rng = np.random.default_rng(7)
    factor = rng.normal(size=(300, 300)) * np.logspace(0, 4.5, 300)
    Q = factor @ factor.T
    c, upper = -np.ones(300) + rng.normal(size=300) * 1e3, 2e-3
    a = _box_qp(Q, c, upper).solution
    x = cp.Variable(300)
    problem = cp.Problem(cp.Minimize(0.5 * cp.quad_form(x, cp.psd_wrap(Q)) + c @ x), [x >= 0, x <= upper])
    problem.solve(solver=cp.CLARABEL)
    assert a.min() >= 0 and a.max() <= upper
    assert 0.5 * a @ Q @ a + c @ a == pytest.approx(problem.value, rel=1e-6)


@pytest.mark.slow
def test_wide_linear_mom_takes_the_kernel_sized_path_and_stays_exact():
    """Linear MOM with 300+ unknowns (a wide inverse problem) goes through the adaptive working
    set, the warm-started path and the box-QP dual that kernel MOM uses; every lam of its grid
    must still be the cvxpy optimum."""
    from mom_pipeline.solvers import policy

    trial = generate_shortest_path(60, 0, degree=4, eps_bar=0.5, seed=4)
    X = trial.lp.solve(trial.train.C).x
    extra = np.random.default_rng(5).uniform(-1, 1, size=(trial.train.Z.shape[0], 3))
    Z = np.hstack([trial.train.Z, extra])  # 40 arcs x 9 features = 360 unknowns
    n_vars = trial.lp.n * Z.shape[1]
    assert policy.adaptive_working_set(n_vars) and policy.path_warm_start(n_vars, 0)
    M, _ = reduced_cost_operator(trial.lp.A, trial.lp.basis_from_solution(X))
    lams = (1e-6, 1e-3, 1e0)
    models = MOM.fit_many([MOM(lam=lam) for lam in lams], Z, X, lp=trial.lp)
    for lam, model in zip(lams, models):
        reference, _ = solve_hinge_qp_cvxpy(M, Z, lam)
        f_ref = mom_objective(reference, M, Z, lam)
        assert model.objective_ == pytest.approx(f_ref, rel=1e-6), lam
        assert model.objective_ >= f_ref * (1 - 1e-6)
