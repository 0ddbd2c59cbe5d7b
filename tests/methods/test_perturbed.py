"""DPO, I-MLE, AI-MLE, NID and PG: gradients against the derivatives of their smoothed losses
(closed form for DPO, finite differences of HiGHS values for I-MLE and PG), the losses against
HiGHS, noise-free recovery, lockstep grids, determinism, bad inputs."""

import numpy as np
import pytest
from dfl_checks import noise_free_regrets, record_solve_calls
from finite_differences import central_differences
from scipy.stats import norm

from mom_pipeline.lp import GridShortestPath, StandardFormLP, solve_lp_batch
from mom_pipeline.methods import AIMLE, DPO, IMLE, NID, PG, perturbed
from mom_pipeline.methods.perturbed import dpo_loss, imle_loss, nid_loss, pg_loss, sum_of_gamma_noise
from mom_pipeline.problems import generate_knapsack, generate_multi_knapsack, generate_shortest_path


@pytest.fixture(scope="module")
def path_trial():
    return generate_shortest_path(12, 0, degree=2, eps_bar=0.3, cost_formula="pyepo", seed=5)


def _phi(lp, W):
    """The optimal values min_x w'x of the rows of W, by HiGHS (the independent reference)."""
    return solve_lp_batch(lp.A, lp.b, W).objective


def test_dpo_gradient_is_the_derivative_of_the_smoothed_squared_error():
    # On the 2 x 2 grid there are two paths, edges (0, 3) and (2, 1): with Gaussian noise the
    # smoothed solution is closed form, x_bar_first = Phi((c_2 + c_1 - c_0 - c_3) / (2 sigma)).
    lp = StandardFormLP.from_structure(GridShortestPath(2, 2))
    first = lp.solve(np.array([[0.0, 1.0, 1.0, 0.0]])).x[0]
    second = 1.0 - first
    c_hat, sigma, x_star = np.array([[0.9, 1.3, 0.7, 1.0]]), 0.8, second[None]
    gap_of = lambda c: (c @ (second - first)) / (2 * sigma)

    def smoothed(c):
        p = norm.cdf(gap_of(c))
        return np.mean((p * first + (1 - p) * second - x_star[0]) ** 2)

    noise = np.random.default_rng(4).standard_normal((1, 400_000, 4))
    loss, grad = dpo_loss(c_hat, x_star, lp, noise, sigma)
    exact = np.array([(smoothed(c_hat[0] + h) - smoothed(c_hat[0] - h)) / 2e-6 for h in np.eye(4) * 1e-6])
    assert loss[0] == pytest.approx(smoothed(c_hat[0]), abs=2e-3)
    np.testing.assert_allclose(grad[0], exact, atol=4e-3)  # Monte Carlo: 400 000 draws
    assert np.abs(exact).max() > 0.05


def test_sum_of_gamma_noise_has_its_moments():
    draws = sum_of_gamma_noise(np.random.default_rng(0), (400_000,), kappa=5.0, n_iterations=10)
    i = np.arange(1, 11)
    assert draws.mean() == pytest.approx((np.sum(1 / i) - np.log(10)) / 5, abs=3e-3)
    assert draws.var() == pytest.approx(np.sum(1 / i**2) / 5, rel=0.02)


@pytest.mark.parametrize("two_sides", [False, True])
def test_imle_gradient_is_the_derivative_of_its_interpolated_loss_with_fixed_noise(path_trial, two_sides):
    lp, C = path_trial.lp, path_trial.train.C
    rng = np.random.default_rng(0)
    C_hat = C + rng.normal(0, 0.5, C.shape)
    X_star = lp.solve(C).x
    noise, sigma, lam = sum_of_gamma_noise(rng, (len(C), 6, lp.n)), 0.5, 2.0
    loss, grad = imle_loss(C_hat, C, X_star, lp, noise, sigma, lam, two_sides)
    low = -1.0 if two_sides else 0.0
    # dL/dx = c where x_bar has positive regret, 0 where it is optimal (L1 of the objective value)
    D = np.where((loss > 0)[:, None], C, 0.0)
    assert 1 <= (loss == 0).sum() < (loss > 0).sum()
    # (finite differences of the oracle's values: 40 x 2 x 12 solves per perturbation; the
    # oracle's values are HiGHS's, checked on the loss below)
    value = lambda W: lp.solve(W, need_basis=False).objective
    surrogate = lambda W: np.mean([(value(W + sigma * noise[:, m] + lam * D)
                                    - value(W + sigma * noise[:, m] + low * lam * D)) / ((1 - low) * lam)
                                   for m in range(6)], axis=0)
    np.testing.assert_allclose(grad, central_differences(surrogate, C_hat), atol=1e-6)
    # The loss: c'x_bar - z*, x_bar the mean of the perturbed solutions (HiGHS values agree).
    perturbed = (C_hat[:, None] + sigma * noise).reshape(-1, lp.n)
    x_bar = lp.solve(perturbed).x.reshape(len(C), 6, -1).mean(axis=1)
    np.testing.assert_allclose(loss, np.einsum("tj,tj->t", C, x_bar) - _phi(lp, C), atol=1e-9)
    np.testing.assert_allclose(np.einsum("tj,tj->t", perturbed, lp.solve(perturbed).x), _phi(lp, perturbed), atol=1e-9)


@pytest.mark.parametrize("two_sides", [False, True])
def test_pg_gradient_is_the_derivative_of_its_loss(two_sides):
    trial = generate_knapsack(10, 0, degree=2, eps_bar=0.3, seed=2)  # a second oracle (greedy)
    lp, C = trial.lp, trial.train.C
    C_hat = C + np.random.default_rng(1).normal(0, 0.3, C.shape)
    loss, grad = pg_loss(C_hat, C, lp, 0.4, two_sides)
    np.testing.assert_allclose(grad, central_differences(lambda W: pg_loss(W, C, lp, 0.4, two_sides)[0], C_hat),
                               atol=1e-6)
    upper = 1.0 if two_sides else 0.0
    reference = (_phi(lp, C_hat + upper * 0.4 * C) - _phi(lp, C_hat - 0.4 * C)) / ((upper + 1) * 0.4)
    np.testing.assert_allclose(loss, reference, atol=1e-7)
    # PG's loss tends to the decision cost c'x(c_hat) as the width shrinks
    near = pg_loss(C_hat, C, lp, 1e-7, two_sides)[0]
    np.testing.assert_allclose(near, np.einsum("tj,tj->t", C, lp.solve(C_hat).x), rtol=1e-5)


def test_nid_gradient_is_minus_the_costs_where_the_decision_is_wrong(path_trial):
    lp, C = path_trial.lp, path_trial.train.C
    X_star = lp.solve(C).x
    C_hat = C + np.random.default_rng(2).normal(0, 0.4, C.shape)
    C_hat[:3] = 2.0 * C[:3]  # these decisions are optimal: no regret, no gradient
    loss, grad = nid_loss(C_hat, C, X_star, lp)
    regret = np.einsum("tj,tj->t", C, lp.solve(C_hat).x) - _phi(lp, C)
    np.testing.assert_allclose(loss, regret, atol=1e-9)
    wrong = regret > 1e-9
    assert wrong.sum() >= 4 and not wrong[:3].any()
    np.testing.assert_array_equal(grad[wrong], -C[wrong])
    assert (grad[~wrong] == 0).all()


def test_aimle_adapts_alpha_from_zero():
    trial = generate_shortest_path(40, 0, degree=2, eps_bar=0.3, cost_formula="pyepo", seed=3)
    lp, Z, C = trial.lp, trial.train.Z, trial.train.C
    model = AIMLE(n_epochs=2, batch_size=8, alpha_step=0.01).fit(Z, lp=lp, C=C)
    # alpha starts at 0 (lam = 0: the first step moves nothing) and, while fewer than all
    # gradient entries are nonzero, grows by alpha_step every step
    assert model.n_steps_ == 10 and model.alpha_ == pytest.approx(0.1)
    # one step with lam = 0 leaves Theta at its seeded linear-layer start
    one_step = AIMLE(n_epochs=1, batch_size=40, random_state=7).fit(Z, lp=lp, C=C)
    d = Z.shape[1]
    np.testing.assert_array_equal(one_step.coef_, np.random.default_rng(7).uniform(-1, 1, (lp.n, d)) / np.sqrt(d))


@pytest.mark.parametrize("model, bound", [
    (DPO(n_epochs=30, step_size=0.05, sigma=0.5), 0.002),
    pytest.param(IMLE(n_epochs=30, step_size=0.05, sigma=0.5, lam_interp=5.0), 0.002, marks=pytest.mark.slow),
    pytest.param(AIMLE(n_epochs=30, step_size=0.05, sigma=0.5), 0.005, marks=pytest.mark.slow),
    (NID(n_epochs=30, step_size=0.05), 0.002),
    (PG(n_epochs=30, step_size=0.05, sigma=1.0), 0.005),
])
def test_noise_free_linear_decisions_are_recovered(model, bound):
    # c = Theta0 z exactly: measured normalized regret DPO 0.0012, I-MLE 0.0003, AI-MLE 0.0030,
    # NID 0.0007, PG 0.0023, against 0.05 for a zero model (PG and AI-MLE need more epochs)
    regret, zero_regret = noise_free_regrets(model)
    assert regret < bound < 0.02 < zero_regret
    assert model.loss_history_.shape == (model.n_steps_,) == (30 * 10,)
    assert model.loss_history_[-20:].mean() < model.loss_history_[:5].mean()


@pytest.mark.parametrize("cls, cells, per_step", [
    (DPO, [dict(sigma=s, step_size=a) for s in (0.1, 1.0) for a in (0.01, 0.1)], [10]),
    (IMLE, [dict(lam_interp=l, step_size=a) for l in (1.0, 10.0) for a in (0.01, 0.1)], [10, 10]),
    (IMLE, [dict(lam_interp=l, two_sides=True, sigma=s) for l in (1.0, 10.0) for s in (0.5, 1.0)], [10, 20]),
    (AIMLE, [dict(sigma=s, step_size=a) for s in (0.5, 1.0) for a in (0.01, 0.1)], [10, 10]),
    (NID, [dict(step_size=a, lam=l) for a in (0.01, 0.1) for l in (0.0, 0.1)], [1]),
    (PG, [dict(sigma=s, step_size=a) for s in (0.1, 1.0) for a in (0.01, 0.1)], [2]),
])
def test_grid_in_lockstep_equals_separate_fits(path_trial, cls, cells, per_step, monkeypatch):
    lp, Z, C = path_trial.lp, path_trial.train.Z, path_trial.train.C
    X_star = lp.solve(C).x
    cells = cells + [dict(cells[0], batch_size=5)]
    separate = [cls(n_epochs=3, **{"batch_size": 4, **cell}).fit(Z, X_star, lp=lp, C=C) for cell in cells]
    calls = record_solve_calls(monkeypatch)
    together = cls.fit_many([cls(n_epochs=3, **{"batch_size": 4, **cell}) for cell in cells], Z, X_star, lp=lp, C=C)
    # per step of the first group: its 4 cells' batches of 4 in one call per solve (x M draws)
    assert calls[:len(per_step)] == [4 * 4 * rows for rows in per_step]
    assert len(calls) == len(per_step) * (3 * 3 + 3 * 3)  # 3 epochs of 3 steps, two groups
    for a, b in zip(separate, together):
        np.testing.assert_array_equal(a.coef_, b.coef_)
        np.testing.assert_allclose(a.loss_history_, b.loss_history_, rtol=1e-12)
        assert getattr(a, "alpha_", None) == getattr(b, "alpha_", None)


@pytest.mark.parametrize("cls", [DPO, IMLE, AIMLE, NID, PG])
def test_deterministic_given_random_state(path_trial, cls):
    lp, Z, C = path_trial.lp, path_trial.train.Z, path_trial.train.C
    X_star = lp.solve(C).x
    fit = lambda seed: cls(n_epochs=2, random_state=seed).fit(Z, X_star, lp=lp, C=C).coef_
    np.testing.assert_array_equal(fit(1), fit(1))
    assert not np.array_equal(fit(1), fit(2))


def test_dpo_never_reads_costs_and_bad_inputs_are_named(path_trial):
    lp, Z, C = path_trial.lp, path_trial.train.Z, path_trial.train.C
    X_star = lp.solve(C).x
    assert not DPO.needs_costs and IMLE.needs_costs and AIMLE.needs_costs and NID.needs_costs and PG.needs_costs
    np.testing.assert_array_equal(DPO(n_epochs=2).fit(Z, X_star, lp=lp).coef_,
                                  DPO(n_epochs=2).fit(Z, X_star, lp=lp, C=np.full_like(C, np.nan)).coef_)
    with pytest.raises(ValueError, match="'sigma' parameter of DPO must be a float in the range"):
        DPO(sigma=0.0).fit(Z, X_star, lp=lp)
    with pytest.raises(ValueError, match="'lam_interp' parameter of IMLE must be"):
        IMLE(lam_interp=-1.0).fit(Z, lp=lp, C=C)
    with pytest.raises(ValueError, match="'two_sides' parameter of PG must be"):
        PG(two_sides="yes").fit(Z, lp=lp, C=C)
    with pytest.raises(ValueError, match="'alpha_step' parameter of AIMLE must be"):
        AIMLE(alpha_step=0.0).fit(Z, lp=lp, C=C)
    bad = C.copy()
    bad[4, 2] = np.nan
    with pytest.raises(ValueError, match="sample 4"):
        NID().fit(Z, lp=lp, C=bad)


def test_perturbed_methods_leave_the_knapsack_slacks_alone(monkeypatch):
    # PyEPO perturbs the decision variables' costs only: on the knapsack's standard form the
    # perturbed methods keep Theta at 0 on the 34 slack columns and draw no noise there
    trial = generate_multi_knapsack(40, 0, degree=2, seed=4)
    lp, Z, C = trial.lp, trial.train.Z, trial.train.C
    X_star = lp.solve(C).x
    seen = []
    original = perturbed.perturbed_solutions
    monkeypatch.setattr(perturbed, "perturbed_solutions",
                        lambda C_hat, lp, noise, sigma, shift=None: seen.append(noise) or original(
                            C_hat, lp, noise, sigma, shift))
    for cls in (DPO, IMLE, AIMLE):
        model = cls(n_epochs=1, batch_size=20).fit(Z, X_star, lp=lp, C=C)
        assert not model.learned_columns_[32:].any() and model.learned_columns_[:32].all()
        assert (model.coef_[32:] == 0).all() and (model.coef_[:32] != 0).any()
    assert seen and all((noise[..., 32:] == 0).all() and (noise[..., :32] != 0).all() for noise in seen)
    everything = DPO(n_epochs=1, batch_size=20, cost_columns="all").fit(Z, X_star, lp=lp)
    assert (everything.coef_[32:] != 0).any()
    # the shortest path has no full set of slacks: every column is learned
    path = generate_shortest_path(12, 0, degree=2, seed=5)
    assert DPO(n_epochs=1).fit(path.train.Z, path.lp.solve(path.train.C).x, lp=path.lp).learned_columns_.all()
