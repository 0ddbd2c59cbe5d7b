"""The block interior-point method of the dual formulation against cvxpy, on random blocks and
on MOM's dual formulation (both of its solvers)."""

import os
import re

import cvxpy as cp
import numpy as np
import pytest

from mom_pipeline.methods.mom import MOM
from mom_pipeline.methods.mom_dual_problem import dual_formulation_certificate
from mom_pipeline.problems import generate_knapsack, generate_shortest_path
from mom_pipeline.solvers.block_hinge_ipm import block_hinge_qp


def _objective(W, U, M, N, Z, lam, weight):
    coupled = np.einsum("tkn,tn->tk", M, Z @ W.T) + np.einsum("tkq,tq->tk", N, U)
    hinge = np.maximum(0.0, 1.0 - coupled).sum() + np.maximum(0.0, 1.0 - U).sum()
    return 0.5 * lam * np.sum(W**2) + weight * hinge


def _cvxpy_reference(M, N, Z, lam, weight):
    """Independent build: a Python loop over the blocks with cvxpy variables."""
    T, K, n = M.shape
    W = cp.Variable((n, Z.shape[1]))
    U = cp.Variable((T, N.shape[2]))
    hinge = [cp.sum(cp.pos(1 - M[t] @ W @ Z[t] - N[t] @ U[t])) + cp.sum(cp.pos(1 - U[t])) for t in range(T)]
    problem = cp.Problem(cp.Minimize(0.5 * lam * cp.sum_squares(W) + weight * sum(hinge)))
    problem.solve(solver=cp.CLARABEL)
    return problem.value


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("lam", [1e-4, 1e-1, 10.0])
@pytest.mark.parametrize("factorization", ["qr", "normal"])
def test_block_ipm_matches_cvxpy_on_random_blocks(seed, lam, factorization):
    rng = np.random.default_rng(seed)
    T, K, q, n, d = 25, 5, 3, 6, 3
    M, N, Z = rng.normal(size=(T, K, n)), rng.normal(size=(T, K, q)), rng.normal(size=(T, d))
    result = block_hinge_qp(M, N, Z, lam, 1.0 / T, factorization=factorization)
    W, U = result.solution
    reference = _cvxpy_reference(M, N, Z, lam, 1.0 / T)
    assert _objective(W, U, M, N, Z, lam, 1.0 / T) == pytest.approx(reference, rel=1e-6)
    assert result.objective == pytest.approx(reference, rel=1e-6)
    assert result.iterations >= 1 and result.path == "block_ipm" and result.certificate["complementarity"] >= 0


@pytest.mark.parametrize("lam", [1e-6, 1e-2, 1e2])
def test_both_dual_solvers_agree_on_degenerate_shortest_paths(lam):
    trial = generate_shortest_path(80, 0, degree=4, eps_bar=0.5, seed=5)
    X = trial.lp.solve(trial.train.C).x
    fast = MOM(lam=lam, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)
    conic = MOM(lam=lam, formulation="dual", solver="cvxpy").fit(trial.train.Z, X, lp=trial.lp)
    assert fast.solver_info_["solver"] == "block_ipm" and conic.solver_info_["solver"] == "clarabel"
    assert fast.objective_ == pytest.approx(conic.objective_, rel=1e-6)


def test_problems_too_large_for_memory_stop_before_any_solve(monkeypatch):
    """Above the budget a fit stops at once (no Clarabel fallback, which needed more memory
    still), naming the sizes and the most observations that fit; those do fit."""
    from mom_pipeline.methods.mom_dual import check_dual_formulation_fits
    from mom_pipeline.solvers import policy
    from mom_pipeline.solvers.policy import DualFormulationTooLarge

    trial = generate_shortest_path(80, 0, degree=4, eps_bar=0.5, seed=5)
    X = trial.lp.solve(trial.train.C).x
    d = trial.train.Z.shape[1]
    needed = policy.block_ipm_bytes(80, 16, 16, 40, d, 24, 1, r=16)
    monkeypatch.setattr(policy, "BLOCK_IPM_MAX_BYTES", needed - 1.0)
    with pytest.raises(DualFormulationTooLarge, match=fr"80 observations of 40 columns and 24 rows with {d} features") as caught:
        check_dual_formulation_fits(trial.lp.A, X, d)
    # A network LP (this grid) above the budget goes to the network method (detour cycles) instead.
    over = MOM(lam=1e-2, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)
    assert over.solver_info_["path"] == "network_detours"
    fitting = int(re.search(r"at most (\d+) observations", str(caught.value)).group(1))
    assert policy.block_ipm_bytes(fitting, 16, 16, 40, d, 24, 1, r=16) <= needed - 1.0
    assert policy.block_ipm_bytes(fitting + 1, 16, 16, 40, d, 24, 1, r=16) > needed - 1.0
    check_dual_formulation_fits(trial.lp.A, X[:fitting], d)  # does not raise
    model = MOM(lam=1e-2, formulation="dual").fit(trial.train.Z[:fitting], X[:fitting], lp=trial.lp)
    assert model.solver_info_["solver"] == "block_ipm"
    monkeypatch.setattr(policy, "BLOCK_IPM_MAX_BYTES", needed)
    at_budget = MOM(lam=1e-2, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)
    assert at_budget.solver_info_["solver"] == "block_ipm"
    assert abs(over.objective_ - at_budget.objective_) <= 1e-7 * at_budget.objective_
    monkeypatch.setattr(policy, "BLOCK_IPM_MAX_BYTES", 1.0)
    with pytest.raises(DualFormulationTooLarge, match="not even one observation of this problem fits"):
        check_dual_formulation_fits(trial.lp.A, X, d)


@pytest.mark.slow
def test_a_lambda_grid_above_the_budget_goes_to_the_network_method(monkeypatch):
    """`fit_many` (a tuning's lockstep grid) fits each model of a route LP that the block
    method has no memory for by the network method (detour cycles), as `fit` does."""
    from mom_pipeline.solvers import policy

    trial = generate_shortest_path(60, 0, degree=4, eps_bar=0.5, seed=6)
    X = trial.lp.solve(trial.train.C).x
    monkeypatch.setattr(policy, "BLOCK_IPM_MAX_BYTES", 1.0)
    models = [MOM(lam=lam, formulation="dual") for lam in (1e-1, 1e-2)]
    assert models[0].fits_by_network(trial.lp.A, X, trial.train.Z)
    MOM.fit_many(models, trial.train.Z, X, lp=trial.lp)
    for model in models:
        alone = MOM(lam=model.lam, formulation="dual", solver="network").fit(trial.train.Z, X, lp=trial.lp)
        assert model.solver_info_["path"] == "network_detours"
        assert abs(model.objective_ - alone.objective_) <= 1e-9 * alone.objective_


def test_an_lp_that_is_not_a_network_stops_above_the_budget(monkeypatch):
    from mom_pipeline.problems import generate_knapsack
    from mom_pipeline.solvers import policy
    from mom_pipeline.solvers.policy import DualFormulationTooLarge

    trial = generate_knapsack(n_train=30, n_test=1, seed=0)
    X = trial.lp.solve(trial.train.C).x
    monkeypatch.setattr(policy, "BLOCK_IPM_MAX_BYTES", 1.0)
    with pytest.raises(DualFormulationTooLarge, match="not even one observation of this problem fits"):
        MOM(lam=1e-2, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)


def test_the_default_budget_is_half_of_this_machines_memory(monkeypatch):
    from mom_pipeline.solvers import policy

    memory = policy.machine_memory_bytes()
    assert 2**28 < memory <= os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    monkeypatch.setattr(policy, "BLOCK_IPM_MAX_BYTES", None)
    assert policy.block_ipm_budget() == pytest.approx(0.5 * memory)
    monkeypatch.setattr(policy, "BLOCK_IPM_MAX_BYTES", 3 * 2**30)
    assert policy.block_ipm_budget() == 3 * 2**30


@pytest.mark.parametrize("limit, expected", [("2147483648\n", 2.0 * 2**30), ("max\n", None)])
def test_a_control_groups_memory_limit_lowers_the_machines_memory(monkeypatch, limit, expected):
    import io

    from mom_pipeline.solvers import policy

    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    monkeypatch.setattr(policy, "open", lambda path, *args: io.StringIO(limit), raising=False)
    assert policy.machine_memory_bytes() == (expected if expected is not None else physical)


def _degenerate_trial(name: str, n_train: int, seed: int):
    if name == "shortest_path":
        trial = generate_shortest_path(n_train, 0, degree=4, eps_bar=0.5, seed=seed)
    else:
        trial = generate_knapsack(n_train, 0, degree=2, eps_bar=0.5, eta_bar=1.0, seed=seed)
    return trial, trial.lp.solve(trial.train.C).x


@pytest.mark.parametrize("name", ["shortest_path", "knapsack"])
@pytest.mark.parametrize("lam", [1e-6, 1e-3, 1.0, 1e2])
def test_block_method_is_certified_by_the_dual_flows(name, lam):
    """Weak duality with the block method's own flows: the gap, the circulation residual
    A_t f_t and the stationarity lam Theta = sum_t f_t z_t' all vanish at its solution."""
    trial, X = _degenerate_trial(name, 60, seed=3)
    model = MOM(lam=lam, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)
    assert model.solver_info_["solver"] == "block_ipm"
    certificate = dual_formulation_certificate(model.coef_, model.dual_, model.flows_, trial.lp.A, X,
                                               trial.train.Z, lam)
    assert certificate["objective"] == pytest.approx(model.objective_, rel=1e-12)
    # Round-off leaves A_t f_t at ~1e-10, which moves the bound by about that times |y|.
    assert -1e-8 <= certificate["relative_gap"] <= 1e-7
    assert certificate["flow_residual"] <= 1e-8 and certificate["equality_residual"] <= 1e-9
    assert certificate["stationarity"] <= 1e-6


def test_certificate_bounds_the_cvxpy_optimum_and_detects_a_suboptimal_point():
    trial, X = _degenerate_trial("shortest_path", 40, seed=4)
    lam = 1e-2
    model = MOM(lam=lam, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)
    reference = MOM(lam=lam, formulation="dual", solver="cvxpy").fit(trial.train.Z, X, lp=trial.lp)
    certificate = dual_formulation_certificate(model.coef_, model.dual_, model.flows_, trial.lp.A, X,
                                               trial.train.Z, lam)
    assert certificate["lower_bound"] <= reference.objective_ * (1 + 1e-9)
    worse = dual_formulation_certificate(1.1 * model.coef_, 1.1 * model.dual_, model.flows_, trial.lp.A, X,
                                         trial.train.Z, lam)
    assert worse["relative_gap"] > 1e-4  # same flows, a worse point: the gap shows it


@pytest.mark.parametrize("name", [pytest.param("shortest_path", marks=pytest.mark.slow), "knapsack"])
def test_warm_started_lambda_path_matches_cvxpy_and_single_fits(name):
    """fit_many solves the grid from the largest lam down, each solve warm-started; every
    model ends at the optimum the reference finds and its own fit finds."""
    trial, X = _degenerate_trial(name, 50, seed=6)
    lambdas = [1e-5, 1e-2, 1.0, 1e2]
    models = MOM.fit_many([MOM(lam=lam, formulation="dual") for lam in lambdas], trial.train.Z, X, lp=trial.lp)
    assert [model.lam for model in models] == lambdas
    assert any(model.solver_info_.get("warm_start") for model in models)
    for model in models:
        single = MOM(lam=model.lam, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)
        reference = MOM(lam=model.lam, formulation="dual", solver="cvxpy").fit(trial.train.Z, X, lp=trial.lp)
        assert model.objective_ == pytest.approx(reference.objective_, rel=1e-6)
        assert model.objective_ == pytest.approx(single.objective_, rel=1e-6)


def test_a_step_that_overflows_ends_in_a_solution_not_an_error():
    """Noiseless PyEPO-style costs (20 samples, degree 4): a warm-started step once overflowed
    (e below 1e-300 on a row) and cho_solve raised on the infinities; the breakdown handling
    must take over and the fit still reach the reference optimum."""
    trial = generate_shortest_path(20, 0, degree=4, eps_bar=0.0, cost_formula="pyepo", seed=5)
    X = trial.lp.solve(trial.train.C).x
    model = MOM.fit_many([MOM(lam=1e-2, formulation="dual")], trial.train.Z, X, lp=trial.lp)[0]
    reference = MOM(lam=1e-2, formulation="dual", solver="cvxpy").fit(trial.train.Z, X, lp=trial.lp)
    assert np.isfinite(model.coef_).all()
    assert model.objective_ == pytest.approx(reference.objective_, rel=1e-6)


@pytest.mark.parametrize("chunk_bytes", [None, 2**12])
def test_threads_change_nothing_in_the_solution(monkeypatch, chunk_bytes):
    """The blocks are shared out in fixed parts and lanes, summed in their order: two or three
    threads give bit for bit the one-thread result (with one chunk per lane and with many small
    chunks per lane), which is cvxpy's optimum."""
    import mom_pipeline.solvers.block_hinge_ipm as block_ipm

    if chunk_bytes is not None:
        monkeypatch.setattr(block_ipm, "CHUNK_BYTES", chunk_bytes)
    rng = np.random.default_rng(3)
    T, K, q, n, d = 37, 5, 3, 6, 3  # T not a multiple of the lanes: an uneven last part
    M, N, Z = rng.normal(size=(T, K, n)), rng.normal(size=(T, K, q)), rng.normal(size=(T, d))
    one = block_hinge_qp(M, N, Z, 1e-2, 1.0 / T)
    W1, U1 = one.solution
    for threads in (2, 3):
        shared = block_hinge_qp(M, N, Z, 1e-2, 1.0 / T, threads=threads)
        W, U = shared.solution
        assert np.array_equal(W, W1) and np.array_equal(U, U1)
        assert shared.iterations == one.iterations
    assert _objective(W1, U1, M, N, Z, 1e-2, 1.0 / T) == pytest.approx(_cvxpy_reference(M, N, Z, 1e-2, 1.0 / T),
                                                                          rel=1e-6)


def test_mom_n_jobs_gives_the_same_dual_fit_and_checks_its_value(monkeypatch):
    from mom_pipeline.solvers import policy

    monkeypatch.setattr(policy, "BLOCK_IPM_WORK_PER_THREAD", 1)  # share even this small problem
    trial, X = _degenerate_trial("shortest_path", 50, seed=6)
    lambdas = [1e-4, 1e-1]
    serial = MOM.fit_many([MOM(lam=lam, formulation="dual") for lam in lambdas], trial.train.Z, X, lp=trial.lp)
    threaded = MOM.fit_many([MOM(lam=lam, formulation="dual", n_jobs=-1) for lam in lambdas], trial.train.Z, X,
                            lp=trial.lp)
    for one, other in zip(serial, threaded):
        assert np.array_equal(one.coef_, other.coef_)
    single = MOM(lam=1e-1, formulation="dual", n_jobs=2).fit(trial.train.Z, X, lp=trial.lp)
    assert np.array_equal(single.coef_, MOM(lam=1e-1, formulation="dual").fit(trial.train.Z, X, lp=trial.lp).coef_)
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="n_jobs"):
            MOM(lam=1e-1, formulation="dual", n_jobs=bad).fit(trial.train.Z, X, lp=trial.lp)
        with pytest.raises(ValueError, match="n_jobs"):
            MOM(lam=1e-1, n_jobs=bad).fit(trial.train.Z, X, lp=trial.lp)


def test_threads_are_used_only_where_a_newton_step_has_work_to_share(monkeypatch):
    """`policy.block_ipm_threads`: one thread on small problems (the shipped inverse example ran
    2x slower on two), the requested number on large ones; MOM hands the block method that."""
    from mom_pipeline.methods import mom_dual
    from mom_pipeline.solvers.policy import BLOCK_IPM_WORK_PER_THREAD, block_ipm_threads

    assert block_ipm_threads(2, 150, 9, 33, 48, 5) == 1  # the shipped example's size
    assert block_ipm_threads(2, 100, 81, 81, 180, 9) == 2  # a 180-arc grid, 100 observations
    assert block_ipm_threads(8, 100, 81, 81, 180, 9) == 8
    work_per_sample = 32**2 * 72 + 16 * 40**2 + 40**2 * 6**2  # the paper's shortest path
    assert block_ipm_threads(2, 500, 16, 16, 40, 6) == 1
    assert block_ipm_threads(2, 2000, 16, 16, 40, 6) == min(2, 2000 * work_per_sample // BLOCK_IPM_WORK_PER_THREAD)
    seen = []
    original = mom_dual.block_hinge_qp
    monkeypatch.setattr(mom_dual, "block_hinge_qp", lambda *args, **kwargs: seen.append(kwargs["threads"])
                        or original(*args, **kwargs))
    trial, X = _degenerate_trial("shortest_path", 50, seed=6)
    MOM(lam=1e-1, formulation="dual", n_jobs=2).fit(trial.train.Z, X, lp=trial.lp)
    assert seen and set(seen) == {1}


@pytest.mark.parametrize("threads", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_memory_estimate_covers_the_traced_peak_of_a_fit(monkeypatch, threads):
    """`policy.block_ipm_bytes` against tracemalloc's peak of a whole dual-formulation fit (the
    blocks, the Newton steps, the flows and the duals). Small factorization chunks make the
    per-block arrays, which grow with T, most of the peak, as they are at scale; the estimate
    must cover the peak without being far above it (it was 1.5x below before; it includes a
    margin of 1.15 for what tracemalloc does not see)."""
    import tracemalloc

    import mom_pipeline.solvers.block_hinge_ipm as block_hinge_ipm
    from mom_pipeline.methods.mom_dual import solve_dual_formulation_path
    from mom_pipeline.methods.mom_problem import support_mask
    from mom_pipeline.solvers.policy import block_ipm_bytes

    monkeypatch.setattr(block_hinge_ipm, "CHUNK_BYTES", 2**21)
    trial = generate_shortest_path(300, 0, degree=4, grid=(7, 7), n_features=8, seed=0)
    X = trial.lp.solve(trial.train.C, need_basis=False).x
    basis = trial.lp.basis_from_solution(X)
    A = np.asarray(trial.lp.A, dtype=float)
    m, n = A.shape
    q = int((m - support_mask(X).sum(axis=1)).max())
    r = n - np.linalg.matrix_rank(A)  # the block method works on A's null space
    estimate = block_ipm_bytes(300, n - m, q, n, 8, m, threads, r)
    tracemalloc.start()
    try:
        held = tracemalloc.get_traced_memory()[0]
        [(_, _, info)] = solve_dual_formulation_path(A, basis, X, trial.train.Z, [1e-2], threads=threads)
        peak = tracemalloc.get_traced_memory()[1] - held
    finally:
        tracemalloc.stop()
    assert info["solver"] == "block_ipm"
    assert peak <= estimate <= 1.5 * peak, (peak / 2**20, estimate / 2**20)
