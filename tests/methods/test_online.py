"""Online methods against finite differences, a literal Algorithm 3, cvxpy (problem (3)), HiGHS,
and the paper's claims on separable / inseparable knapsack data."""

import cvxpy as cp
import numpy as np
import pytest

from mom_pipeline.lp import reduced_cost_operator, solve_lp_batch
from mom_pipeline.methods.mom import MOM
from mom_pipeline.methods.ftrl import FTRLMOM
from mom_pipeline.methods.online import (
    OnlineMOM,
    Perceptron,
    SuboptimalityOGD,
    decision_irrelevant_costs,
    hinge_loss,
    hinge_subgradient,
    project_frobenius,
    step_sizes,
)
from mom_pipeline.problems import generate_knapsack, generate_shortest_path


def _observed(trial, n=None):
    """(Z, C, X*, basis, M) of the first n training samples."""
    Z, C = trial.train.Z[:n], trial.train.C[:n]
    X = trial.lp.solve(C).x
    basis = trial.lp.basis_from_solution(X)
    M, _ = reduced_cost_operator(trial.lp.A, basis)
    return Z, C, X, basis, M


@pytest.fixture(scope="module")
def separable():
    """c = Theta* z exactly (figure 5's online setting)."""
    return generate_knapsack(400, 0, degree=1, prices="uniform", seed=11)


@pytest.fixture(scope="module")
def inseparable():
    """Heavy multiplicative and additive noise: no Theta explains the observed x*."""
    return generate_knapsack(1000, 0, degree=1, eps_bar=1.0, eta_bar=10.0, prices="uniform", seed=3)


def _theta_star(trial):
    """The ground truth in standard form: c = Theta* z with Theta* = (-V; 0)."""
    V = trial.V
    return np.vstack([-V, np.zeros((trial.lp.n - V.shape[0], V.shape[1]))])


# ----------------------------------------------------------------------------- online MOM


def test_hinge_subgradient_matches_finite_differences(separable):
    Z, _, _, _, M = _observed(separable, 5)
    rng = np.random.default_rng(0)
    for t in range(5):
        # A random Theta is off the kinks almost surely: there the subgradient is the gradient.
        theta = rng.normal(scale=3.0, size=(M.shape[2], Z.shape[1]))
        h = 1e-6
        numeric = np.zeros_like(theta)
        for index in np.ndindex(theta.shape):
            step = np.zeros_like(theta)
            step[index] = h
            numeric[index] = (hinge_loss(M[t], Z[t], theta + step) - hinge_loss(M[t], Z[t], theta - step)) / (2 * h)
        np.testing.assert_allclose(hinge_subgradient(M[t], Z[t], theta), numeric, atol=1e-6)
        # Subgradient inequality at far-away points (convexity, any kink).
        g = hinge_subgradient(M[t], Z[t], theta)
        for _ in range(20):
            other = rng.normal(scale=3.0, size=theta.shape)
            assert hinge_loss(M[t], Z[t], other) >= hinge_loss(M[t], Z[t], theta) + np.sum(g * (other - theta)) - 1e-9


def test_hinge_loss_matches_cvxpy_slacks(separable):
    """l(Theta) = min ||s||_1 s.t. M Theta z >= 1 - s, s >= 0 (the paper's definition)."""
    Z, _, _, _, M = _observed(separable, 3)
    theta = np.random.default_rng(1).normal(size=(M.shape[2], Z.shape[1]))
    for t in range(3):
        s = cp.Variable(M.shape[1])
        problem = cp.Problem(cp.Minimize(cp.sum(s)), [M[t] @ (theta @ Z[t]) >= 1 - s, s >= 0])
        problem.solve()
        assert hinge_loss(M[t], Z[t], theta) == pytest.approx(problem.value, abs=1e-6)


@pytest.mark.parametrize("schedule", ["constant", "decreasing"])
def test_online_mom_iterates_follow_algorithm_2(separable, schedule):
    """Replay Algorithm 2 with finite-difference gradients and an explicit projection."""
    Z, C, X, basis, M = _observed(separable, 12)
    radius = 1.5
    model = OnlineMOM(step_size=2.0, radius=radius, step_schedule=schedule).fit(Z, X, lp=separable.lp, basis=basis)
    T = Z.shape[0]
    eta = 2.0 / np.sqrt(T) * np.ones(T) if schedule == "constant" else 2.0 / np.sqrt(np.arange(1, T + 1))
    theta = np.zeros((M.shape[2], Z.shape[1]))
    norms = [0.0]
    for t in range(T):
        np.testing.assert_allclose(model.predicted_costs_[t], theta @ Z[t], atol=1e-6)
        # The hinge is linear in the direction of its own gradient away from kinks: the
        # directional finite difference along each coordinate gives the gradient.
        grad = np.zeros_like(theta)
        for index in np.ndindex(theta.shape):
            e = np.zeros_like(theta)
            e[index] = 1e-7
            grad[index] = (hinge_loss(M[t], Z[t], theta + e) - hinge_loss(M[t], Z[t], theta)) / 1e-7
        theta = theta - eta[t] * grad
        if np.linalg.norm(theta) > radius:
            theta = theta / np.linalg.norm(theta) * radius
        norms.append(np.linalg.norm(theta))
    np.testing.assert_allclose(model.final_coef_, theta, atol=1e-5)
    np.testing.assert_allclose(model.coef_path_norms_, norms, atol=1e-5)
    assert np.all(model.coef_path_norms_ <= radius + 1e-12)
    assert np.isclose(model.coef_path_norms_.max(), radius)  # the projection was active


def test_online_mom_grid_in_lockstep_equals_each_literal_pass(separable):
    """fit_many (a tuning grid of step sizes, schedules and radii, one with the projection off)
    ends every model where its own pass of Algorithm 2 ends, replayed literally here with
    `hinge_subgradient` and `project_frobenius`, and where its own `fit` ends."""
    Z, C, X, basis, M = _observed(separable, 60)
    cells = [dict(step_size=eta, radius=radius, step_schedule=schedule)
             for eta in (0.01, 1.0, 10.0) for radius in (None, 0.5, 3.0) for schedule in ("constant", "decreasing")]
    models = OnlineMOM.fit_many([OnlineMOM(**cell) for cell in cells], Z, X, lp=separable.lp, basis=basis, C=C)
    T = Z.shape[0]
    projected = 0
    for cell, model in zip(cells, models):
        etas = step_sizes(cell["step_size"], cell["step_schedule"], T)
        theta = np.zeros((M.shape[2], Z.shape[1]))
        total, norms = theta.copy(), [0.0]
        for t in range(T):
            np.testing.assert_allclose(model.predicted_costs_[t], theta @ Z[t], atol=1e-10)
            theta = project_frobenius(theta - etas[t] * hinge_subgradient(M[t], Z[t], theta), cell["radius"])
            total += theta
            norms.append(np.linalg.norm(theta))
        np.testing.assert_allclose(model.final_coef_, theta, atol=1e-10)
        np.testing.assert_allclose(model.averaged_coef_, total / (T + 1), atol=1e-10)
        np.testing.assert_allclose(model.coef_path_norms_, norms, atol=1e-10)
        projected += cell["radius"] is not None and np.isclose(max(norms), cell["radius"])
        alone = OnlineMOM(**cell).fit(Z, X, lp=separable.lp, basis=basis, C=C)
        np.testing.assert_allclose(alone.final_coef_, model.final_coef_, atol=1e-12)
        np.testing.assert_array_equal(alone.mistakes_, model.mistakes_)
        np.testing.assert_allclose(alone.regret_, model.regret_, atol=1e-12)
    assert projected >= 4  # the ball was reached, so the projection was exercised


def test_look_ahead_plays_the_iterate_updated_with_the_current_step(separable):
    """The released notebook's order: step t plays Theta_{t+1} (already updated from sample t's
    basis), so it is scored on a decision that saw its own answer; the iterates are the same."""
    Z, C, X, basis, M = _observed(separable, 60)
    honest, ahead = OnlineMOM.fit_many([OnlineMOM(step_size=1.0), OnlineMOM(step_size=1.0, look_ahead=True)],
                                       Z, X, lp=separable.lp, basis=basis, C=C)
    eta = step_sizes(1.0, "constant", 60)[0]
    theta = np.zeros((M.shape[2], Z.shape[1]))
    for t in range(60):
        np.testing.assert_allclose(honest.predicted_costs_[t], theta @ Z[t], atol=1e-12)
        theta = theta - eta * hinge_subgradient(M[t], Z[t], theta)
        np.testing.assert_allclose(ahead.predicted_costs_[t], theta @ Z[t], atol=1e-12)
    np.testing.assert_allclose(ahead.final_coef_, honest.final_coef_, atol=0)
    np.testing.assert_allclose(ahead.coef_path_norms_, honest.coef_path_norms_, atol=0)
    # Step 1: the honest pass plays Theta_1 = 0; the look-ahead one already the step from sample 1.
    assert not honest.predicted_costs_[0].any() and ahead.predicted_costs_[0].any()
    assert ahead.mistakes_[-1] < honest.mistakes_[-1] and ahead.cumulative_regret_[-1] < honest.cumulative_regret_[-1]
    alone = OnlineMOM(step_size=1.0, look_ahead=True).fit(Z, X, lp=separable.lp, basis=basis, C=C)
    np.testing.assert_allclose(alone.predicted_costs_, ahead.predicted_costs_, atol=1e-12)


def test_online_mom_regret_decreases_on_separable_data(separable):
    Z, C, X, basis, _ = _observed(separable)
    model = OnlineMOM(step_size=10.0).fit(Z, X, lp=separable.lp, basis=basis, C=C)
    T = Z.shape[0]
    first, last = model.regret_[: T // 4].mean(), model.regret_[-T // 4:].mean()
    assert last < 0.5 * first
    assert np.all(model.regret_ >= -1e-9)  # x* is optimal for the true c
    np.testing.assert_allclose(model.cumulative_regret_, np.cumsum(model.regret_))
    np.testing.assert_allclose(model.relative_regret_, model.regret_ / np.linalg.norm(C, axis=1))


def test_averaged_coef_and_use_average(separable):
    Z, _, X, basis, _ = _observed(separable, 40)
    last = OnlineMOM(step_size=1.0).fit(Z, X, lp=separable.lp, basis=basis)
    averaged = OnlineMOM(step_size=1.0, use_average=True).fit(Z, X, lp=separable.lp, basis=basis)
    # The iterates Theta_1..Theta_{T+1}, from prefix fits with the same per-step step size.
    eta = step_sizes(1.0, "constant", 40)[0]
    iterates = [np.zeros_like(last.coef_)]
    theta = iterates[0]
    _, _, _, _, M = _observed(separable, 40)
    for t in range(40):
        theta = theta - eta * hinge_subgradient(M[t], Z[t], theta)
        iterates.append(theta)
    np.testing.assert_allclose(last.averaged_coef_, np.mean(iterates, axis=0), atol=1e-12)
    np.testing.assert_allclose(averaged.coef_, last.averaged_coef_)
    np.testing.assert_allclose(last.coef_, iterates[-1], atol=1e-12)
    np.testing.assert_allclose(averaged.predict_cost(Z[:3]), Z[:3] @ last.averaged_coef_.T)


# ----------------------------------------------------------------------------- perceptron


def _literal_perceptron(A, Z, basis, threshold=0.5, simultaneous=False):
    """Algorithm 3 line by line: recompute the reduced costs from Theta_tmp for every i (or,
    `simultaneous`, once per step from Theta_t, as the released notebook did)."""
    m, n = A.shape
    theta = np.zeros((n, Z.shape[1]))
    for t in range(Z.shape[0]):
        B = basis[t]
        A_B_inv_A = np.linalg.solve(A[:, B], A)  # (m, n)
        c_hat = theta @ Z[t]
        step_reduced = c_hat - c_hat[B] @ A_B_inv_A
        for i in range(n):
            if i in B:
                continue
            c_hat = theta @ Z[t]
            reduced = step_reduced if simultaneous else c_hat - c_hat[B] @ A_B_inv_A
            if reduced[i] <= threshold:
                theta[i] += Z[t]
                theta[B] -= np.outer(A_B_inv_A[:, i], Z[t])
    return theta


def test_perceptron_matches_literal_algorithm_3(separable):
    Z, _, X, basis, _ = _observed(separable, 60)
    model = Perceptron().fit(Z, X, lp=separable.lp, basis=basis)
    np.testing.assert_allclose(model.coef_, _literal_perceptron(separable.lp.A, Z, basis), atol=1e-9)


@pytest.mark.parametrize("threshold", [0.0, 0.5])
def test_simultaneous_perceptron_matches_a_literal_pass(separable, threshold):
    Z, _, X, basis, _ = _observed(separable, 60)
    model = Perceptron(threshold=threshold, update_rule="simultaneous").fit(Z, X, lp=separable.lp, basis=basis)
    np.testing.assert_allclose(model.coef_, _literal_perceptron(separable.lp.A, Z, basis, threshold, True), atol=1e-9)
    sequential = Perceptron(threshold=threshold).fit(Z, X, lp=separable.lp, basis=basis)
    assert not np.allclose(model.coef_, sequential.coef_)  # the rule changes the pass


@pytest.mark.parametrize("threshold, update_rule, theta, n_updates", [
    # Step 1 (z = 1, Theta_1 = 0): both reduced costs are 0. Sequentially, updating row 1 raises
    # both by (M M')[:, 1] = (2, 1), so row 2 (now 1) is left; simultaneously both are updated.
    # Step 2 (z = 0.2): reduced costs (0.4, 0.2) after a sequential step 1, above 0 but not 1/2;
    # (0.6, 0.6) after a simultaneous one, above both thresholds.
    (0.0, "sequential", [-1.0, 1.0, 0.0], [1, 0]),
    (0.5, "sequential", [-1.4, 1.2, 0.2], [1, 2]),
    (0.0, "simultaneous", [-2.0, 1.0, 1.0], [2, 0]),
    (0.5, "simultaneous", [-2.0, 1.0, 1.0], [2, 0]),
])
def test_perceptron_threshold_and_update_rule_on_a_hand_checked_simplex(threshold, update_rule, theta, n_updates):
    """min c'x over the simplex x1 + x2 + x3 = 1, x* = e1 (basis {1}): the reduced costs of
    columns 2 and 3 are c2 - c1 and c3 - c1, so M = [[-1, 1, 0], [-1, 0, 1]]; one feature."""
    A, b = np.array([[1.0, 1.0, 1.0]]), np.array([1.0])
    Z, X, basis = np.array([[1.0], [0.2]]), np.tile([1.0, 0.0, 0.0], (2, 1)), np.zeros((2, 1), dtype=np.int64)
    model = Perceptron(threshold=threshold, update_rule=update_rule).fit(Z, X, A=A, b=b, basis=basis)
    np.testing.assert_allclose(model.coef_[:, 0], theta, atol=1e-12)
    np.testing.assert_array_equal(model.n_updates_, n_updates)


def test_perceptron_on_shortest_path_matches_literal_algorithm_3():
    trial = generate_shortest_path(25, 0, degree=1, seed=2)
    Z, _, X, basis, _ = _observed(trial)
    model = Perceptron(threshold=0.3).fit(Z, X, lp=trial.lp, basis=basis)
    np.testing.assert_allclose(model.coef_, _literal_perceptron(trial.lp.A, Z, basis, 0.3), atol=1e-8)


def test_perceptron_mistakes_stop_growing_and_progress_towards_theta_star(separable):
    Z, C, X, basis, _ = _observed(separable)
    model = Perceptron().fit(Z, X, lp=separable.lp, basis=basis, C=C)
    T = Z.shape[0]
    first_half = model.mistakes_[T // 2 - 1]
    second_half = model.mistakes_[-1] - first_half
    assert second_half < first_half
    # Each update adds M_t[k]' z' whose inner product with Theta* is the true reduced cost of
    # a non-basic column, >= 0: <Theta, Theta*> never decreases (the perceptron argument).
    theta_star = _theta_star(separable)
    np.testing.assert_allclose(Z @ theta_star.T, C, atol=1e-12)
    progress = [np.sum(Perceptron().fit(Z[:t], X[:t], lp=separable.lp, basis=basis[:t]).coef_ * theta_star)
                for t in range(1, 41)]
    assert np.all(np.diff(progress) >= -1e-9)
    assert progress[-1] > 0


# ----------------------------------------------------------------------------- decisions


@pytest.mark.parametrize("make", [
    lambda: OnlineMOM(step_size=3.0, step_schedule="decreasing"),
    lambda: Perceptron(),
    lambda: FTRLMOM(),
    lambda: SuboptimalityOGD(step_size=3.0, step_schedule="decreasing"),
])
def test_decisions_are_lp_optima_of_the_prediction_before_the_update(separable, make):
    Z, C, X, basis, _ = _observed(separable, 30)
    lp = separable.lp
    model = make().fit(Z, X, lp=lp, basis=basis)
    for t in (1, 7, 29):
        # Theta_{t+1} from an independent pass on the first t samples (the passes are prefix-
        # consistent with a per-step step size; the constant schedule depends on T).
        theta_t = make().fit(Z[:t], X[:t], lp=lp, basis=basis[:t]).final_coef_
        np.testing.assert_allclose(model.predicted_costs_[t], theta_t @ Z[t], atol=1e-6)
    reference = solve_lp_batch(lp.A, lp.b, model.predicted_costs_)
    played = np.einsum("tn,tn->t", model.predicted_costs_, model.decisions_)
    np.testing.assert_allclose(played, reference.objective, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(model.decisions_ @ lp.A.T, np.tile(lp.b, (30, 1)), atol=1e-9)
    assert model.decisions_.min() >= -1e-12
    wrong = np.abs(model.decisions_ - X).max(axis=1) > 1e-7
    np.testing.assert_array_equal(model.mistakes_, np.cumsum(wrong))
    assert np.all(np.isnan(model.regret_))  # no C given: nothing to report


# ----------------------------------------------------------------------------- FTRL


def _mom_cvxpy(M, Z, lam):
    """Problem (3) from scratch: (lam/2)||Theta||^2 + (1/t) sum ||s||_1, M_t Theta z_t >= 1 - s_t."""
    T, K, n = M.shape
    theta = cp.Variable((n, Z.shape[1]))
    s = cp.Variable((T, K), nonneg=True)
    margins = cp.hstack([M[t] @ theta @ Z[t] for t in range(T)])
    problem = cp.Problem(cp.Minimize(lam / 2 * cp.sum_squares(theta) + cp.sum(s) / T),
                         [margins >= 1 - cp.reshape(s, (T * K,), order="C")])
    problem.solve(solver=cp.CLARABEL)
    return theta.value


def _mom_objective(theta, M, Z, lam):
    return lam / 2 * np.sum(theta**2) + np.mean([hinge_loss(M[t], Z[t], theta) for t in range(len(Z))])


def _assert_same_mom_optimum(theta, reference, M, Z, lam):
    """Same objective to 1e-7 and, the objective being lam-strongly convex, Theta to about
    sqrt(2 * gap / lam) (Clarabel's tolerances leave ~1e-5 on Theta)."""
    assert _mom_objective(theta, M, Z, lam) == pytest.approx(_mom_objective(reference, M, Z, lam), abs=1e-7)
    np.testing.assert_allclose(theta, reference, atol=1e-4 * max(1.0, np.abs(reference).max()))


def test_ftrl_equals_mom_from_scratch_at_each_refit(separable):
    Z, C, X, basis, M = _observed(separable, 40)
    model = FTRLMOM(refit_every=5, dense_steps=10).fit(Z, X, lp=separable.lp, basis=basis, C=C)
    np.testing.assert_array_equal(model.refit_steps_, list(range(1, 11)) + [15, 20, 25, 30, 35, 40])
    np.testing.assert_allclose(model.lambdas_, 1 / np.sqrt(np.arange(1, 41)))
    # Theta_{t+1}, the MOM optimum on samples 1..t, plays sample t+1 (0-based index t).
    for t in (1, 2, 6, 10, 15):
        reference = _mom_cvxpy(M[:t], Z[:t], 1 / np.sqrt(t))
        played = model.predicted_costs_[t]
        np.testing.assert_allclose(played, reference @ Z[t], atol=1e-4 * max(1.0, np.abs(reference).max()))
    _assert_same_mom_optimum(model.coef_, _mom_cvxpy(M, Z, 1 / np.sqrt(40)), M, Z, 1 / np.sqrt(40))
    offline = MOM(lam=1 / np.sqrt(40)).fit(Z, X, lp=separable.lp, basis=basis)
    _assert_same_mom_optimum(model.coef_, offline.coef_, M, Z, 1 / np.sqrt(40))
    # Between refits the leader is stale: steps 16..20 all play Theta_16 (refit after step 15);
    # recover it from those 5 predictions (5 features, full rank) and check it is that optimum.
    stale = np.linalg.lstsq(Z[15:20], model.predicted_costs_[15:20], rcond=None)[0].T
    _assert_same_mom_optimum(stale, _mom_cvxpy(M[:15], Z[:15], 1 / np.sqrt(15)), M[:15], Z[:15], 1 / np.sqrt(15))


def test_ftrl_lambda_scale_and_offset(separable):
    """lam_t = scale / sqrt(t + offset) (the released notebook: 1e-6 / sqrt(t + 1)); the last refit is
    the MOM optimum on all samples with that lam."""
    Z, _, X, basis, M = _observed(separable, 30)
    assert FTRLMOM(lambda_scale=1e-6, lambda_offset=1).lambdas(4) == pytest.approx(1e-6 / np.sqrt([2, 3, 4, 5]))
    model = FTRLMOM(lambda_scale=0.1, lambda_offset=1).fit(Z, X, lp=separable.lp, basis=basis)
    lam = 0.1 / np.sqrt(31)
    assert model.lambdas_[-1] == pytest.approx(lam)
    _assert_same_mom_optimum(model.coef_, MOM(lam=lam).fit(Z, X, lp=separable.lp, basis=basis).coef_, M, Z, lam)


def test_ftrl_warm_start_does_not_change_the_result(separable):
    Z, _, X, basis, _ = _observed(separable, 30)
    warm = FTRLMOM(warm_start=True).fit(Z, X, lp=separable.lp, basis=basis)
    cold = FTRLMOM(warm_start=False).fit(Z, X, lp=separable.lp, basis=basis)
    np.testing.assert_allclose(warm.predicted_costs_, cold.predicted_costs_, atol=2e-4)
    assert sum(i["restricted_solves"] for i in warm.solve_info_) > 0


def test_ftrl_fast_and_cvxpy_solvers_agree(separable):
    Z, _, X, basis, _ = _observed(separable, 12)
    fast = FTRLMOM(solver="fast").fit(Z, X, lp=separable.lp, basis=basis)
    reference = FTRLMOM(solver="cvxpy").fit(Z, X, lp=separable.lp, basis=basis)
    np.testing.assert_allclose(fast.predicted_costs_, reference.predicted_costs_, atol=2e-4)
    assert len(reference.solve_info_) == 12


# ----------------------------------------------------------------------------- suboptimality OGD


def test_suboptimality_ogd_update_shrinks_theta_to_first_order(separable):
    """||Theta_{t+1}||^2 = ||Theta_t||^2 - 2 eta l_sub + eta^2 ||g||^2 with l_sub >= 0."""
    Z, _, X, basis, _ = _observed(separable, 50)
    model = SuboptimalityOGD(step_size=1.0, step_schedule="decreasing", init_scale=5.0).fit(
        Z, X, lp=separable.lp, basis=basis)
    eta = 1.0 / np.sqrt(np.arange(1, 51))
    loss = np.einsum("tn,tn->t", model.predicted_costs_, X - model.decisions_)
    assert np.all(loss >= -1e-9)  # x_t is optimal for c_hat_t
    assert np.any(loss > 1e-3)
    gradient_sq = np.sum((X - model.decisions_) ** 2, axis=1) * np.sum(Z**2, axis=1)
    norms_sq = model.coef_path_norms_**2
    np.testing.assert_allclose(norms_sq[1:], norms_sq[:-1] - 2 * eta * loss + eta**2 * gradient_sq, rtol=1e-9)
    assert model.coef_path_norms_[0] == pytest.approx(5.0)
    # The random start lies in {A Theta = 0}: costs A'y change no decision, and no update
    # leaves that subspace.
    np.testing.assert_allclose(separable.lp.A @ model.coef_, 0, atol=1e-10)
    irrelevant = decision_irrelevant_costs(separable.lp.A)
    assert irrelevant.shape == (separable.lp.m, separable.lp.n)
    np.testing.assert_allclose(irrelevant @ np.linalg.pinv(separable.lp.A) @ separable.lp.A, irrelevant, atol=1e-10)


def test_suboptimality_ogd_collapses_on_inseparable_data(inseparable):
    Z, C, X, basis, _ = _observed(inseparable)
    model = SuboptimalityOGD(step_size=10.0, step_schedule="decreasing", init_scale=100.0).fit(
        Z, X, lp=inseparable.lp, basis=basis, C=C)
    assert model.coef_path_norms_[-1] < 0.1 * model.coef_path_norms_[0]
    # Regret grows linearly: the last quarter loses about as much as the first.
    T = Z.shape[0]
    quarters = model.relative_regret_.reshape(4, T // 4).sum(axis=1)
    assert quarters[-1] > 0.7 * quarters[0]
    assert model.coef_path_norms_[-1] < model.coef_path_norms_[T // 2] < model.coef_path_norms_[T // 4]


# ----------------------------------------------------------------------------- interface


def test_bad_input_and_hyperparameters_raise_clear_errors(separable):
    Z, C, X, basis, _ = _observed(separable, 10)
    lp = separable.lp
    with pytest.raises(ValueError, match="X_star"):
        OnlineMOM().fit(Z, lp=lp)
    with pytest.raises(ValueError, match="step_schedule"):
        OnlineMOM(step_schedule="sometimes").fit(Z, X, lp=lp)
    with pytest.raises(ValueError, match="init"):
        SuboptimalityOGD(init="ones").fit(Z, X, lp=lp)
    with pytest.raises(ValueError, match="refit_every"):
        FTRLMOM(refit_every=0).fit(Z, X, lp=lp)
    with pytest.raises(ValueError, match="X_star must be"):
        Perceptron().fit(Z, X[:5], lp=lp)
    with pytest.raises(ValueError, match="regret_scale"):
        Perceptron().fit(Z, X, lp=lp, C=C, regret_scale="percent")
    with pytest.raises(ValueError, match="radius"):
        SuboptimalityOGD(radius=-1.0).fit(Z, X, lp=lp)
    with pytest.raises(ValueError, match="features"):
        OnlineMOM().fit(Z, X, lp=lp).predict_cost(Z[:, :3])
    for model in (OnlineMOM(), Perceptron(), FTRLMOM(), SuboptimalityOGD()):
        assert model.needs_costs is False


@pytest.mark.parametrize("make", [lambda: OnlineMOM(step_size=3.0), lambda: SuboptimalityOGD(step_size=3.0)])
def test_per_sample_constraints_give_the_same_pass(separable, make):
    """(T, m, n) constraints (solved by HiGHS, one LP per step for the OGD) = shared ones (oracle)."""
    from mom_pipeline.lp import StandardFormLP

    Z, C, X, basis, _ = _observed(separable, 20)
    A, b = separable.lp.A, separable.lp.b
    stacked = StandardFormLP(A=np.tile(A, (20, 1, 1)), b=np.tile(b, (20, 1)))
    shared = make().fit(Z, X, lp=separable.lp, C=C)
    per_sample = make().fit(Z, X, lp=stacked, C=C)
    np.testing.assert_allclose(per_sample.predicted_costs_, shared.predicted_costs_, atol=1e-9)
    # Step 1 of online MOM plays c_hat = 0: every vertex ties and HiGHS and the oracle may differ.
    first = 1 if isinstance(shared, OnlineMOM) else 0
    np.testing.assert_allclose(per_sample.regret_[first:], shared.regret_[first:], atol=1e-9)
