"""PFYL, DBB and SPO+ by Adam: gradients against finite differences of their smoothed losses, the losses
against HiGHS, recovery of noise-free linear decisions, lockstep grids, bad inputs."""

import numpy as np
import pytest
from dfl_checks import record_solve_calls
from finite_differences import central_differences

from mom_pipeline.lp import solve_lp_batch
from mom_pipeline.methods import DBB, OLS, PFYL, SPOPlus, SPOPlusAdam
from mom_pipeline.methods.dfl import dbb_loss, pfyl_loss, spo_plus_loss
from mom_pipeline.metrics import normalized_regret
from mom_pipeline.problems import generate_knapsack, generate_shortest_path


@pytest.fixture(scope="module")
def path_trial():
    return generate_shortest_path(12, 0, degree=2, eps_bar=0.3, cost_formula="pyepo", seed=5)


@pytest.mark.parametrize("sigma", [0.1, 1.0])
def test_pfyl_gradient_is_the_derivative_of_the_perturbed_loss_with_fixed_noise(path_trial, sigma):
    lp, C = path_trial.lp, path_trial.train.C
    rng = np.random.default_rng(0)
    C_hat = C + rng.normal(0, 0.5, C.shape)  # a generic point: every argmin is unique
    X_star = lp.solve(C).x
    noise = rng.standard_normal((C.shape[0], 7, lp.n))
    loss, grad = pfyl_loss(C_hat, X_star, lp, noise, sigma)
    numeric = central_differences(lambda W: pfyl_loss(W, X_star, lp, noise, sigma)[0], C_hat)
    np.testing.assert_allclose(grad, numeric, atol=1e-6)
    # The loss itself, from HiGHS: c_hat'x* - mean_m min_x (c_hat + sigma xi_m)'x >= 0.
    perturbed = (C_hat[:, None, :] + sigma * noise).reshape(-1, lp.n)
    reference = solve_lp_batch(lp.A, lp.b, perturbed).objective.reshape(C.shape[0], 7).mean(axis=1)
    np.testing.assert_allclose(loss, np.einsum("tj,tj->t", C_hat, X_star) - reference, atol=1e-8)
    assert (loss >= -1e-9).all()


@pytest.mark.parametrize("problem", ["shortest_path", "knapsack"])
def test_spo_plus_subgradient_is_the_derivative_of_its_loss_and_the_loss_is_highs(path_trial, problem):
    trial = path_trial if problem == "shortest_path" else generate_knapsack(10, 0, degree=2, eps_bar=0.3, seed=2)
    lp, C = trial.lp, trial.train.C
    C_hat = C + np.random.default_rng(4).normal(0, 0.3, C.shape)  # generic: x(2 c_hat - c) unique
    X_star = lp.solve(C).x
    loss, grad = spo_plus_loss(C_hat, C, X_star, lp)
    numeric = central_differences(lambda W: spo_plus_loss(W, C, X_star, lp)[0], C_hat)
    np.testing.assert_allclose(grad, numeric, atol=1e-6)
    # max_x (c - 2 c_hat)'x + 2 c_hat'x* - c'x*, the max from HiGHS; 0 at c_hat = c, >= 0 elsewhere
    reference = -solve_lp_batch(lp.A, lp.b, 2 * C_hat - C).objective + np.einsum("tj,tj->t", 2 * C_hat - C, X_star)
    np.testing.assert_allclose(loss, reference, atol=1e-8)
    assert (loss >= -1e-9).all() and np.allclose(spo_plus_loss(C, C, X_star, lp)[0], 0.0, atol=1e-9)


def test_spo_plus_by_adam_takes_adam_steps_on_the_same_subgradient_as_spo_plus(path_trial):
    # one step from Theta = 0 on the whole sample: SPO+'s subgradient step is -step * g, Adam's
    # first step -step * sign(g) (|m / sqrt(v)| = 1): the same direction, entry by entry
    lp, Z, C = path_trial.lp, path_trial.train.Z, path_trial.train.C
    T = len(Z)
    sgd = SPOPlus(n_epochs=1, batch_size=T, lam=0.0, step_size=1.0, cost_columns="all").fit(Z, lp=lp, C=C)
    adam = SPOPlusAdam(n_epochs=1, batch_size=T, step_size=1.0).fit(Z, lp=lp, C=C)
    assert adam.n_steps_ == 1
    moved = np.abs(sgd.coef_) > 1e-3  # Adam's eps (1e-8) shortens the step of a tiny gradient
    assert moved.sum() > 10
    np.testing.assert_array_equal(np.sign(adam.coef_[moved]), np.sign(sgd.coef_[moved]))
    np.testing.assert_allclose(np.abs(adam.coef_[moved]), 1.0, rtol=1e-4)


@pytest.mark.parametrize("lam_interp", [0.5, 20.0])
def test_dbb_gradient_is_the_derivative_of_the_interpolated_loss(lam_interp):
    trial = generate_knapsack(10, 0, degree=2, eps_bar=0.3, seed=2)  # a second oracle (greedy)
    lp, C = trial.lp, trial.train.C
    C_hat = C + np.random.default_rng(1).normal(0, 0.3, C.shape)
    loss, grad = dbb_loss(C_hat, C, lp, lam_interp)
    numeric = central_differences(lambda W: dbb_loss(W, C, lp, lam_interp)[0], C_hat)
    np.testing.assert_allclose(grad, numeric, atol=1e-6)
    # f = [phi(c_hat + lam c) - phi(c_hat)] / lam with phi the LP's optimal value (HiGHS).
    phi = lambda W: solve_lp_batch(lp.A, lp.b, W).objective
    np.testing.assert_allclose(loss, (phi(C_hat + lam_interp * C) - phi(C_hat)) / lam_interp, atol=1e-7)


def test_dbb_interpolated_loss_tends_to_the_decision_cost(path_trial):
    lp, C = path_trial.lp, path_trial.train.C
    C_hat = C + np.random.default_rng(3).normal(0, 0.5, C.shape)
    decision_cost = np.einsum("tj,tj->t", C, lp.solve(C_hat).x)
    far, _ = dbb_loss(C_hat, C, lp, 10.0)
    near, _ = dbb_loss(C_hat, C, lp, 1e-7)
    np.testing.assert_allclose(near, decision_cost, rtol=1e-6)
    assert not np.allclose(far, decision_cost)


@pytest.mark.parametrize("model", [PFYL(n_epochs=30, step_size=0.05, sigma=0.5),
                                   DBB(n_epochs=30, step_size=0.05, lam_interp=5.0),
                                   SPOPlusAdam(n_epochs=30, step_size=0.05)])
def test_noise_free_linear_costs_are_recovered_in_decisions(model):
    # c = Theta0 z exactly (linear, no noise): the decisions of the learned model must be the
    # optimal paths of the test contexts, up to near ties (the costs of the 70 paths lie close
    # together here: a wrong path costs on average a few thousandths more). Measured: PFYL
    # 0.0004 normalized regret, 82% exact; DBB 0.0011, 73%.
    trial = generate_shortest_path(300, 300, degree=1, cost_formula="pyepo_printed", seed=11)
    lp, Z, C = trial.lp, trial.train.Z, trial.train.C
    assert OLS().fit(Z, C=C).coef_ @ Z[:3].T == pytest.approx(C[:3].T, abs=1e-9)  # truly linear
    model.fit(Z, lp=lp, C=C)
    optimum = lp.solve(trial.test.C)
    decisions = model.decide(trial.test.Z, lp).x
    regret = np.einsum("tj,tj->t", trial.test.C, decisions) - optimum.objective
    zero_model = lp.solve(np.zeros_like(trial.test.C)).x
    zero_regret = np.einsum("tj,tj->t", trial.test.C, zero_model) - optimum.objective
    assert normalized_regret(regret, optimum.objective) < 0.002
    assert normalized_regret(zero_regret, optimum.objective) > 0.02
    assert np.mean(np.abs(decisions - optimum.x).max(axis=1) < 1e-9) >= 0.65
    assert model.loss_history_.shape == (model.n_steps_,) == (30 * 10,)
    if isinstance(model, PFYL):  # (DBB's interpolated loss is dominated by the constant c'x*)
        assert model.loss_history_[-20:].mean() < model.loss_history_[:5].mean() / 5


@pytest.mark.parametrize("cls, cells", [
    (PFYL, [dict(sigma=s, step_size=a) for s in (0.1, 1.0) for a in (0.01, 0.1)]),
    (DBB, [dict(lam_interp=l, step_size=a) for l in (1.0, 10.0) for a in (0.01, 0.1)]),
    (SPOPlusAdam, [dict(lam=l, step_size=a) for l in (0.0, 0.1) for a in (0.01, 0.1)]),
])
def test_grid_in_lockstep_equals_separate_fits(path_trial, cls, cells, monkeypatch):
    lp, Z, C = path_trial.lp, path_trial.train.Z, path_trial.train.C
    X_star = lp.solve(C).x
    cells = cells + [dict(cells[0], batch_size=5)]
    separate = [cls(n_epochs=3, **{"batch_size": 4, **cell}).fit(Z, X_star, lp=lp, C=C)
                for cell in cells]
    calls = record_solve_calls(monkeypatch)
    together = cls.fit_many([cls(n_epochs=3, **{"batch_size": 4, **cell}) for cell in cells], Z, X_star, lp=lp, C=C)
    per_row = {PFYL: 10, DBB: 2, SPOPlusAdam: 1}[cls]  # M perturbations, DBB's two solves, SPO+'s one
    assert max(calls) == 4 * 4 * per_row  # four cells of batch 4 stacked into one oracle call
    assert len(calls) == 3 * 3 + 3 * 3  # 3 epochs of 3 steps for each of the two groups
    for a, b in zip(separate, together):
        np.testing.assert_array_equal(a.coef_, b.coef_)
        np.testing.assert_allclose(a.loss_history_, b.loss_history_, rtol=1e-12)


def test_deterministic_given_random_state(path_trial):
    lp, Z, C = path_trial.lp, path_trial.train.Z, path_trial.train.C
    fit = lambda seed: PFYL(n_epochs=2, random_state=seed).fit(Z, lp=lp, C=C).coef_
    np.testing.assert_array_equal(fit(1), fit(1))
    assert not np.array_equal(fit(1), fit(2))


def test_bad_inputs_are_named(path_trial):
    lp, Z, C = path_trial.lp, path_trial.train.Z, path_trial.train.C
    with pytest.raises(ValueError, match="'sigma' parameter of PFYL must be a float in the range"):
        PFYL(sigma=0.0).fit(Z, lp=lp, C=C)
    with pytest.raises(ValueError, match="'lam_interp' parameter of DBB must be"):
        DBB(lam_interp=-1.0).fit(Z, lp=lp, C=C)
    with pytest.raises(ValueError, match="'n_epochs' parameter of DBB must be an int in the range"):
        DBB(n_epochs=0).fit(Z, lp=lp, C=C)
    bad = C.copy()
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="sample 3"):
        PFYL().fit(Z, lp=lp, C=bad)
