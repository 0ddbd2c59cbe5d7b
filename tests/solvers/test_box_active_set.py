"""The warm-started active-set box QP (`solvers.box_active_set`) against cvxpy, and kernel MOM
grids that use it (narrow RBF kernels, lam down to 1e-6) against the cvxpy reference."""

import cvxpy as cp
import numpy as np
import pytest

import mom_pipeline.solvers.hinge_working_set as hinge_working_set
from mom_pipeline.methods.kernels import KernelMOM
from mom_pipeline.methods.mom import mom_objective, solve_hinge_qp, solve_hinge_qp_cvxpy
from mom_pipeline.methods.mom_problem import MOMHingeRows, kkt_certificate, operators_of_bases
from mom_pipeline.problems import generate_knapsack
from mom_pipeline.solvers.box_active_set import FreeBlock, box_qp_active_set, matrix_blocks
from mom_pipeline.solvers.interior_point import BoxQPStalled, box_gap

LAMBDAS = [float(v) for v in np.logspace(-6, 2, 9)]


def _box_problem(seed: int, k: int = 120, rank: int = 200, upper: float = 0.3):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(k, rank))
    return A @ A.T / rank, rng.normal(size=k), upper


def _cvxpy_box(Q, c, upper) -> float:
    a = cp.Variable(c.size)
    problem = cp.Problem(cp.Minimize(0.5 * cp.quad_form(a, cp.psd_wrap(Q)) + c @ a), [a >= 0, a <= upper])
    problem.solve(solver=cp.CLARABEL)
    return float(problem.value)


def test_free_block_solves_changed_free_sets_like_a_direct_solve():
    Q, _, _ = _box_problem(0, k=60, rank=80)
    block = FreeBlock(matrix_blocks(Q), 60, np.arange(40))
    free = np.r_[np.arange(5, 40), np.arange(45, 52)]  # 5 rows left the base, 7 joined
    rhs = np.random.default_rng(1).normal(size=free.size)
    np.testing.assert_allclose(block.solve(free, rhs), np.linalg.solve(Q[np.ix_(free, free)], rhs), rtol=1e-9, atol=1e-12)
    assert block.drift(free) == 12


def test_free_block_of_a_block_function_repeats_solves_on_one_free_set():
    """Q given block by block (as a Gram matrix of hinge rows is) solves like the dense Q, and a
    second right-hand side on the same free set (iterative refinement) reuses the bordered part."""
    Q, _, _ = _box_problem(2, k=60, rank=80)
    requested = []

    def block_of(rows, cols):
        requested.append((rows.size, cols.size))
        return Q[np.ix_(rows, cols)]

    block = FreeBlock(block_of, 60, np.arange(40))
    free = np.r_[np.arange(3, 40), np.arange(50, 56)]
    rng = np.random.default_rng(3)
    for _ in range(2):
        rhs = rng.normal(size=free.size)
        np.testing.assert_allclose(block.solve(free, rhs), np.linalg.solve(Q[np.ix_(free, free)], rhs),
                                   rtol=1e-9, atol=1e-12)
    assert len(requested) == 3  # the base block once, the border and the added rows' block once
    other = np.r_[np.arange(40), 45]
    rhs = rng.normal(size=other.size)
    np.testing.assert_allclose(block.solve(other, rhs), np.linalg.solve(Q[np.ix_(other, other)], rhs), rtol=1e-9,
                               atol=1e-12)


def test_gram_between_is_a_block_of_the_rows_gram_matrix():
    rng = np.random.default_rng(4)
    for d in (3, 9):  # fewer features than costs (linear MOM), more (kernel features)
        rows = MOMHingeRows(rng.normal(size=(12, 4, 6)), rng.normal(size=(12, d)))
        left, right = rng.choice(48, 10, replace=False), rng.choice(48, 7, replace=False)
        H = rows.dense_rows(np.arange(48))
        np.testing.assert_allclose(rows.gram_between(left, right), H[left] @ H[right].T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("guess", ["all_free", "perturbed"])
def test_active_set_box_qp_equals_cvxpy(seed, guess):
    Q, c, upper = _box_problem(seed)
    f_ref = _cvxpy_box(Q, c, upper)
    rng = np.random.default_rng(seed + 10)
    if guess == "all_free":
        status = np.zeros(c.size, dtype=int)
    else:  # a rough guess: the unconstrained minimizer's side of the box, 10% of rows flipped
        status = np.where(c > 0, -1, 1)
        flip = rng.choice(c.size, c.size // 10, replace=False)
        status[flip] = rng.integers(-1, 2, flip.size)
    a, steps = box_qp_active_set(Q, c, upper, status, gap_tol=1e-12)
    assert a is not None and steps >= 1
    assert a.min() >= 0 and a.max() <= upper
    f = 0.5 * a @ Q @ a + c @ a
    assert f == pytest.approx(f_ref, rel=1e-6, abs=1e-9)
    assert f <= f_ref + 1e-9  # never above the reference's optimum
    assert box_gap(Q, c, upper, a) <= 1e-12


def test_active_set_box_qp_gives_up_on_a_singular_free_block():
    Q, c, upper = _box_problem(3, k=80, rank=20)  # rank 20: any free block above 20 rows is singular
    a, _ = box_qp_active_set(Q, c, upper, np.zeros(80, dtype=int), gap_tol=1e-12, max_free=20)
    assert a is None
    a, _ = box_qp_active_set(Q, c, upper, np.zeros(80, dtype=int), gap_tol=1e-12)
    assert a is None or box_gap(Q, c, upper, a) <= 1e-8 * abs(0.5 * a @ Q @ a + c @ a)


@pytest.fixture(scope="module")
def knapsack():
    trial = generate_knapsack(50, 0, degree=1, feature_low=-1.0, seed=21)  # figure 4's hard RBF setting
    solution = trial.lp.solve(trial.train.C)
    return trial, solution, operators_of_bases(trial.lp.A, solution.basis)


def _count_active_set(monkeypatch) -> list:
    """Wrap the active-set solver of the working set; returns the list of its successes."""
    successes = []
    original = hinge_working_set.box_qp_active_set

    def counted(*args, **kwargs):
        a, steps = original(*args, **kwargs)
        successes.append(a is not None)
        return a, steps

    monkeypatch.setattr(hinge_working_set, "box_qp_active_set", counted)
    return successes


@pytest.mark.slow
@pytest.mark.parametrize("kernel, degree, gamma", [("rbf", 2, 0.1), ("rbf", 2, 1.0), ("poly", 3, 0.5)])
def test_kernel_mom_grid_with_the_active_set_equals_cvxpy(knapsack, monkeypatch, kernel, degree, gamma):
    """Every lam of a cell (1e-6..1e2, one regularization path), narrow RBF included, ends at the
    cvxpy optimum (1e-6 relative) and is certified by the KKT gap."""
    trial, solution, M = knapsack
    calls = _count_active_set(monkeypatch)
    Z = trial.train.Z
    models = KernelMOM.fit_many([KernelMOM(kernel=kernel, degree=degree, gamma=gamma, lam=lam) for lam in LAMBDAS],
                                Z, solution.x, lp=trial.lp, basis=solution.basis)
    features = models[0].transform(Z) @ models[0].row_space_
    for model in models:
        assert kkt_certificate(model.mom_.coef_, M, features, model.lam)["relative_gap"] <= 1e-7
        if model.lam in (1e-6, 1e-4, 1e-2, 1.0):  # sampled against cvxpy
            reference, _ = solve_hinge_qp_cvxpy(M, features, model.lam)
            f_ref = mom_objective(reference, M, features, model.lam)
            assert model.objective_ <= f_ref * (1 + 1e-6)
            if model.lam >= 1e-4:  # at 1e-6, Clarabel's default accuracy is the limit (see test_tuning_paths)
                assert model.objective_ == pytest.approx(f_ref, rel=1e-6)
    if kernel == "rbf":
        assert any(calls)  # the warm-started active set solved some rounds


def test_a_stalled_interior_point_method_is_finished_by_the_active_set(knapsack, monkeypatch):
    """When box_qp stops on round-off, the active sets of its last point are finished exactly."""
    trial, solution, M = knapsack
    features = KernelMOM(kernel="rbf", gamma=0.5).fit(trial.train.Z, solution.x, lp=trial.lp, basis=solution.basis)
    features = features.transform(trial.train.Z) @ features.row_space_
    original = hinge_working_set.box_qp
    stalls = []

    def stalling(Q, c, upper, **kwargs):
        # a stall happens at the round-off floor, near the optimum: not at the relative-gap stop
        a = original(Q, c, upper, **dict(kwargs, gap_rel=0.0)).solution
        stalls.append(1)
        raise BoxQPStalled("stalled for the test", np.clip(a + 1e-9 * upper, 0.0, upper))

    monkeypatch.setattr(hinge_working_set, "box_qp", stalling)
    monkeypatch.setattr(hinge_working_set, "active_set_guess", lambda *args: None)  # every round by box_qp
    monkeypatch.setattr(hinge_working_set, "solve_clarabel",
                        lambda *args, **kwargs: pytest.fail("Clarabel should not be needed"))
    lam = 1e-3
    w0 = np.random.default_rng(3).normal(size=M.shape[2] * features.shape[1])  # skip the active-set finish
    Theta, info = solve_hinge_qp(M, features, lam, w0=w0)
    reference, _ = solve_hinge_qp_cvxpy(M, features, lam)
    assert stalls and info["restricted_solves"] >= 1
    assert mom_objective(Theta, M, features, lam) == pytest.approx(mom_objective(reference, M, features, lam), rel=1e-6)
    assert kkt_certificate(Theta, M, features, lam)["relative_gap"] <= 1e-7


def _record_starts(monkeypatch) -> list:
    """Wrap the path's working-set solver; returns the list, per call, of whether it was given a
    neighbouring cell's margins to start from (start_margins, its last positional argument)."""
    import mom_pipeline.solvers.hinge_path as hinge_path

    started = []
    original = hinge_path.solve_working_set

    def recorded(*args, **kwargs):
        started.append(args[-1] is not None)
        return original(*args, **kwargs)

    monkeypatch.setattr(hinge_path, "solve_working_set", recorded)
    return started


@pytest.mark.parametrize("kernel", [pytest.param(dict(kernel="poly", degree=3), marks=pytest.mark.slow), dict(kernel="poly", degree=1),
                                    pytest.param(dict(kernel="rbf"), marks=pytest.mark.slow)])
def test_cells_started_from_a_neighbouring_gamma_end_at_their_own_optimum(knapsack, monkeypatch, kernel):
    """A kernel grid's cells that differ only in gamma start their working sets from the
    previous cell's margins (RBF: when gamma at most doubles); each lam still ends where the
    cell alone ends, and at cvxpy's optimum (lam 1e-6 included). Degree 1 has 50 unknowns here,
    below the kernel size, where paths without such margins are solved cold: it starts too."""
    trial, solution, M = knapsack
    Z = trial.train.Z
    started = _record_starts(monkeypatch)
    gammas = (2.0, 3.0)
    grid = [KernelMOM(gamma=gamma, lam=lam, **kernel) for gamma in gammas for lam in LAMBDAS]
    KernelMOM.fit_many(grid, Z, solution.x, lp=trial.lp, basis=solution.basis)
    assert any(started)  # the second cell's working sets started from the first cell's margins
    second = grid[len(LAMBDAS):]
    started.clear()
    alone = KernelMOM.fit_many([KernelMOM(gamma=gammas[1], lam=lam, **kernel) for lam in LAMBDAS],
                               Z, solution.x, lp=trial.lp, basis=solution.basis)
    assert not any(started)
    features = second[0].transform(Z) @ second[0].row_space_
    for model, reference_model in zip(second, alone):
        assert model.objective_ == pytest.approx(reference_model.objective_, rel=1e-7)
        assert kkt_certificate(model.mom_.coef_, M, features, model.lam)["relative_gap"] <= 1e-7
        if model.lam in (1e-6, 1e-3):
            reference, _ = solve_hinge_qp_cvxpy(M, features, model.lam)
            f_ref = mom_objective(reference, M, features, model.lam)
            assert model.objective_ <= f_ref * (1 + 1e-6)
            assert model.objective_ == pytest.approx(f_ref, rel=1e-6)


def test_rbf_cells_far_apart_in_gamma_start_on_their_own(knapsack, monkeypatch):
    """From gamma 0.1 to 0.5 the previous cell's active sets are a poor start (measured 3.3x
    slower on figure 4's data): the second RBF cell's path starts from its own warm starts."""
    trial, solution, _ = knapsack
    started = _record_starts(monkeypatch)
    grid = [KernelMOM(kernel="rbf", gamma=gamma, lam=lam) for gamma in (0.5, 2.0, 3.0) for lam in (1e-2, 1.0)]
    KernelMOM.fit_many(grid, trial.train.Z, solution.x, lp=trial.lp, basis=solution.basis)
    # gamma 0.5 and 2 start on their own (finer lam steps in between), gamma 3 from gamma 2
    assert sum(started) == 2 and started[-2:] == [True, True]


def test_margins_without_a_margin_row_do_not_start_the_working_set(knapsack, monkeypatch):
    """A neighbouring cell's margins with no row on the margin (its closed-form optimum: every row
    violated) would put every row of the wide band below the margin into the first working set
    (1,900-2,400 of 3,750 rows on figure 4's data): the path starts on its own there, uses margins
    that have margin rows, and each lam ends at its optimum either way."""
    from mom_pipeline.methods.mom import MOM
    from mom_pipeline.methods.mom_problem import optimality_margins

    trial, solution, M = knapsack
    Z = trial.train.Z
    started = _record_starts(monkeypatch)
    lams = [1.0, 1e-2]
    alone = MOM.fit_many([MOM(lam=lam) for lam in lams], Z, solution.x, lp=trial.lp, basis=solution.basis)
    optimal_margins = [optimality_margins(model.coef_, M, Z).ravel() for model in alone]
    assert all(np.any(np.abs(u - 1.0) <= 1e-6) for u in optimal_margins)
    for starts, expected in (([np.full_like(u, 0.5) for u in optimal_margins], [False, False]),
                             (optimal_margins, [True, True])):
        started.clear()
        models = MOM.fit_many([MOM(lam=lam) for lam in lams], Z, solution.x, lp=trial.lp, basis=solution.basis,
                              start_margins=starts)
        assert started == expected
        for model, reference in zip(models, alone):
            assert model.objective_ == pytest.approx(reference.objective_, rel=1e-9)


def test_start_margins_must_match_the_models(knapsack):
    from mom_pipeline.methods.mom import MOM

    trial, solution, _ = knapsack
    with pytest.raises(ValueError, match="start_margins has 1 entries for 2 models"):
        MOM.fit_many([MOM(lam=1e-2), MOM(lam=1.0)], trial.train.Z, solution.x, lp=trial.lp, basis=solution.basis,
                     start_margins=[None])


def test_a_restricted_qp_clarabel_gives_up_on_is_solved_by_the_certified_box_dual(knapsack, monkeypatch):
    """Clarabel stops with InsufficientProgress on some tiny, badly scaled restricted QPs (a
    figure-4 polynomial cell of degree 1 at lam 1e-6: 14 rows, 105 unknowns). Such a failure
    used to end the whole grid's joint fit; the box dual now answers, exactly."""
    trial, solution, M = knapsack
    Z = trial.train.Z  # linear MOM, 105 unknowns: small restricted QPs go to Clarabel first
    lam = 1e-3
    reference, _ = solve_hinge_qp_cvxpy(M, Z, lam)
    attempts = []

    def giving_up(*args, **kwargs):
        attempts.append(1)
        raise RuntimeError("Clarabel did not solve the restricted MOM QP (status InsufficientProgress)")

    monkeypatch.setattr(hinge_working_set, "solve_clarabel", giving_up)
    w0 = np.random.default_rng(3).normal(size=M.shape[2] * Z.shape[1])  # skip the active-set finish
    Theta, info = solve_hinge_qp(M, Z, lam, w0=w0)
    assert attempts and info["restricted_solves"] >= 1
    assert mom_objective(Theta, M, Z, lam) == pytest.approx(mom_objective(reference, M, Z, lam), rel=1e-6)
    assert kkt_certificate(Theta, M, Z, lam)["relative_gap"] <= 1e-7

    # When the box dual cannot certify an answer either, Clarabel's error is what the caller sees.
    monkeypatch.setattr(hinge_working_set, "_box_dual", lambda *args: None)
    with pytest.raises(RuntimeError, match="InsufficientProgress"):
        solve_hinge_qp(M, Z, lam, w0=w0)


@pytest.mark.slow
def test_path_guesses_reuse_one_gram_factorization_and_end_at_the_optimum(knapsack, monkeypatch):
    """On a narrow RBF path the guesses from the previous lam solve their Gram systems from a
    shared factorization (fewer factorizations than solves), and every lam stays exact."""
    trial, solution, M = knapsack
    factored, solves = [], []
    original_init, original_solve = FreeBlock.__init__, hinge_working_set.MarginSystems.solve

    def counted_init(self, *args, **kwargs):
        factored.append(1)
        original_init(self, *args, **kwargs)

    def counted_solve(self, index, rhs):
        solves.append(index.size)
        return original_solve(self, index, rhs)

    monkeypatch.setattr(FreeBlock, "__init__", counted_init)
    monkeypatch.setattr(hinge_working_set.MarginSystems, "solve", counted_solve)
    Z = trial.train.Z
    models = KernelMOM.fit_many([KernelMOM(kernel="rbf", gamma=0.1, lam=lam) for lam in LAMBDAS], Z, solution.x,
                                lp=trial.lp, basis=solution.basis)
    features = models[0].transform(Z) @ models[0].row_space_
    assert solves and len(factored) < len(solves)
    for model in models:
        assert kkt_certificate(model.mom_.coef_, M, features, model.lam)["relative_gap"] <= 1e-7
