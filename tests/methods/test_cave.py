"""CaVE: the projection onto the optimality cone against Clarabel, the gradient against finite
differences, noise-free recovery from x* alone, lockstep grids, determinism, no costs read."""

import cvxpy as cp
import numpy as np
import pytest
from finite_differences import central_differences

from mom_pipeline.lp import StandardFormLP
from mom_pipeline.methods import CaVE
from mom_pipeline.methods.cave import OptimalityCones, cave_loss, cave_targets, cosine_loss
from mom_pipeline.methods.mom_problem import support_mask
from mom_pipeline.metrics import normalized_regret
from mom_pipeline.problems import generate_knapsack, generate_shortest_path


def _clarabel_projection(c, A, x_star):
    """argmin ||c - (A'y + sum_{j: x*_j = 0} w_j e_j)||, w >= 0: the cone as its definition
    states it (no null-space elimination), solved by Clarabel."""
    zero = np.flatnonzero(~support_mask(x_star[None])[0])
    E = np.eye(A.shape[1])[:, zero]
    y, w = cp.Variable(A.shape[0]), cp.Variable(len(zero), nonneg=True)
    cp.Problem(cp.Minimize(cp.sum_squares(c - A.T @ y - E @ w))).solve(solver=cp.CLARABEL)
    return A.T @ y.value + E @ w.value


@pytest.fixture(scope="module", params=["shortest_path", "knapsack"])
def trial(request):
    if request.param == "shortest_path":
        return generate_shortest_path(8, 0, degree=2, eps_bar=0.3, cost_formula="pyepo", seed=5)
    return generate_knapsack(8, 0, degree=2, eps_bar=0.3, seed=2)


def test_projection_matches_clarabel_and_the_true_costs_lie_in_their_cone(trial):
    lp, C = trial.lp, trial.train.C
    X_star = lp.solve(C).x
    cones = OptimalityCones(X_star, lp)
    C_hat = C + np.random.default_rng(0).normal(0, 1.0, C.shape)  # many outside their cone
    P = cones.project(C_hat, np.arange(len(C)))
    zero = ~support_mask(X_star)
    for t in range(len(C)):
        # Clarabel's interior point ends within 1e-8 of the optimal squared distance
        np.testing.assert_allclose(P[t], _clarabel_projection(C_hat[t], lp.A, X_star[t]), atol=1e-5)
        # and the projection is exact: the residual lies in the polar cone {r: Ar = 0, r_j <= 0
        # where x*_j = 0} and is orthogonal to P (Moreau's decomposition)
        residual = C_hat[t] - P[t]
        assert np.abs(lp.A @ residual).max() < 1e-10 and residual[zero[t]].max(initial=0) < 1e-10
        assert abs(residual @ P[t]) < 1e-10
    loss, _ = cave_loss(C_hat, cones, np.arange(len(C)))
    assert (loss >= -1 - 1e-12).all() and (loss <= 0).all() and (loss > -1 + 1e-6).any()
    # x* is optimal for c exactly when c lies in its cone: the true costs score -1
    np.testing.assert_allclose(cave_loss(C, cones, np.arange(len(C)))[0], -1.0, atol=1e-12)


def test_gradient_is_the_derivative_of_the_cosine_loss(trial):
    lp, C = trial.lp, trial.train.C
    X_star = lp.solve(C).x
    cones = OptimalityCones(X_star, lp)
    C_hat = C + np.random.default_rng(1).normal(0, 1.0, C.shape)
    samples = np.arange(len(C))
    loss, grad = cave_loss(C_hat, cones, samples)
    numeric = central_differences(lambda W: cave_loss(W, cones, samples)[0], C_hat)
    np.testing.assert_allclose(grad, numeric, atol=1e-6)
    # the loss is scale-free, so its gradient is orthogonal to c_hat
    np.testing.assert_allclose(np.einsum("tj,tj->t", grad, C_hat), 0.0, atol=1e-10)


def test_noise_free_linear_decisions_are_recovered_from_x_star_alone():
    trial = generate_shortest_path(300, 300, degree=1, cost_formula="pyepo_printed", seed=11)
    lp, Z = trial.lp, trial.train.Z
    X_star = lp.solve(trial.train.C).x
    model = CaVE(n_epochs=30, step_size=0.05).fit(Z, X_star, lp=lp)  # no costs given
    optimum = lp.solve(trial.test.C)
    regret = np.einsum("tj,tj->t", trial.test.C, model.decide(trial.test.Z, lp).x) - optimum.objective
    zero_regret = np.einsum("tj,tj->t", trial.test.C, lp.solve(np.zeros_like(trial.test.C)).x) - optimum.objective
    # measured: 0.0008 against 0.05 for a zero model
    assert normalized_regret(regret, optimum.objective) < 0.002 < 0.02 < normalized_regret(zero_regret,
                                                                                           optimum.objective)
    assert model.loss_history_.shape == (30 * 10,) and model.loss_history_[-20:].mean() < -0.9999
    assert model.loss_history_[-20:].mean() < model.loss_history_[:5].mean()


def test_grid_in_lockstep_equals_separate_fits_and_fits_are_seeded():
    trial = generate_shortest_path(12, 0, degree=2, eps_bar=0.3, cost_formula="pyepo", seed=5)
    lp, Z = trial.lp, trial.train.Z
    X_star = lp.solve(trial.train.C).x
    cells = [dict(step_size=a, lam=l) for a in (0.01, 0.1) for l in (0.0, 0.1)] + [dict(step_size=0.1, batch_size=5)]
    separate = [CaVE(n_epochs=3, **{"batch_size": 4, **cell}).fit(Z, X_star, lp=lp) for cell in cells]
    together = CaVE.fit_many([CaVE(n_epochs=3, **{"batch_size": 4, **cell}) for cell in cells], Z, X_star, lp=lp)
    for a, b in zip(separate, together):
        np.testing.assert_array_equal(a.coef_, b.coef_)
        np.testing.assert_allclose(a.loss_history_, b.loss_history_, rtol=1e-12)
    fit = lambda seed: CaVE(n_epochs=2, random_state=seed).fit(Z, X_star, lp=lp).coef_
    np.testing.assert_array_equal(fit(1), fit(1))
    assert not np.array_equal(fit(1), fit(2))


def test_costs_are_never_read_and_x_star_is_required():
    trial = generate_shortest_path(12, 0, degree=2, eps_bar=0.3, cost_formula="pyepo", seed=5)
    lp, Z = trial.lp, trial.train.Z
    X_star = lp.solve(trial.train.C).x
    assert not CaVE.needs_costs
    honest = CaVE(n_epochs=2).fit(Z, X_star, lp=lp).coef_
    poisoned = CaVE(n_epochs=2).fit(Z, X_star, lp=lp, C=np.full_like(trial.train.C, np.nan)).coef_
    np.testing.assert_array_equal(honest, poisoned)
    with pytest.raises(ValueError, match="CaVE learns from the observed optimal solutions: pass X_star"):
        CaVE().fit(Z, lp=lp, C=trial.train.C)
    with pytest.raises(ValueError, match="'step_size' parameter of CaVE must be"):
        CaVE(step_size=0.0).fit(Z, X_star, lp=lp)


def test_per_sample_constraints_project_onto_each_samples_cone():
    trial = generate_shortest_path(5, 0, degree=2, eps_bar=0.3, cost_formula="pyepo", seed=5)
    A, b = trial.lp.A, trial.lp.b
    rng = np.random.default_rng(4)
    # the same LP written with a different invertible row combination per sample: same cones
    mixes = [np.eye(A.shape[0]) + 0.1 * rng.normal(size=(A.shape[0], A.shape[0])) for _ in range(5)]
    per_sample = StandardFormLP(A=np.stack([M @ A for M in mixes]), b=np.stack([M @ b for M in mixes]))
    X_star = trial.lp.solve(trial.train.C).x
    C_hat = trial.train.C + rng.normal(0, 1.0, trial.train.C.shape)
    np.testing.assert_allclose(OptimalityCones(X_star, per_sample).project(C_hat, range(5)),
                               OptimalityCones(X_star, trial.lp).project(C_hat, range(5)), atol=1e-10)


def test_cave_plus_targets_lie_strictly_inside_the_cone_and_the_gradient_holds_them_fixed(trial):
    lp, C = trial.lp, trial.train.C
    X_star = lp.solve(C).x
    cones = OptimalityCones(X_star, lp)
    samples = np.arange(len(C))
    C_hat = C + np.random.default_rng(2).normal(0, 1.0, C.shape)
    P = cones.project(C_hat, samples)
    outside = np.linalg.norm(C_hat - P, axis=1) > 1e-6 * np.linalg.norm(C_hat, axis=1)
    assert outside.any() and cones.centres.min() >= 0 and cones.centres.sum(axis=1).max() < 1
    for project in (True, False):
        targets = cave_targets(C_hat, cones, samples, 0.2, project)
        if project:  # a convex combination of p/||p|| and the centre: inside the cone, off its boundary
            np.testing.assert_allclose(cones.project(targets, samples), targets, atol=1e-10)
            unit = P / np.linalg.norm(P, axis=1, keepdims=True)
            assert (np.linalg.norm(targets - unit, axis=1)[outside] > 1e-3).all()
        loss, grad = cave_loss(C_hat, cones, samples, 0.2, project)
        fixed = lambda W: cosine_loss(W, targets)[0]
        np.testing.assert_allclose(loss, fixed(C_hat), rtol=1e-12)
        np.testing.assert_allclose(grad, central_differences(fixed, C_hat), atol=1e-6)
    # a prediction inside its cone keeps its own direction as the target: loss -1
    np.testing.assert_allclose(cave_loss(C, cones, samples, 0.2)[0], -1.0, atol=1e-12)


@pytest.mark.slow
def test_cave_plus_recovers_noise_free_decisions_and_the_hybrid_projects_at_its_ratio(monkeypatch):
    trial = generate_shortest_path(300, 300, degree=1, cost_formula="pyepo_printed", seed=11)
    lp, Z = trial.lp, trial.train.Z
    X_star = lp.solve(trial.train.C).x
    optimum = lp.solve(trial.test.C)
    # measured: CaVE+ 0.0005, hybrid (98 of the 300 steps projected) 0.0013
    for model in (CaVE(n_epochs=30, step_size=0.05, inner_ratio=0.2),
                  CaVE(n_epochs=30, step_size=0.05, inner_ratio=0.2, solve_ratio=0.3)):
        model.fit(Z, X_star, lp=lp)
        regret = np.einsum("tj,tj->t", trial.test.C, model.decide(trial.test.Z, lp).x) - optimum.objective
        assert normalized_regret(regret, optimum.objective) < 0.002
    assert 0.2 * model.n_steps_ < model.n_projected_steps_ < 0.4 * model.n_steps_
    monkeypatch.setattr(OptimalityCones, "project", lambda *args: pytest.fail("a projection at solve_ratio 0"))
    never = CaVE(n_epochs=1, inner_ratio=0.2, solve_ratio=0.0).fit(Z, X_star, lp=lp)
    assert never.n_projected_steps_ == 0 and never.n_steps_ == 10


def test_cave_plus_and_hybrid_grids_in_lockstep_equal_separate_fits():
    trial = generate_shortest_path(12, 0, degree=2, eps_bar=0.3, cost_formula="pyepo", seed=5)
    lp, Z = trial.lp, trial.train.Z
    X_star = lp.solve(trial.train.C).x
    cells = [dict(inner_ratio=a, step_size=s, solve_ratio=0.5) for a in (0.0, 0.2) for s in (0.01, 0.1)]
    separate = [CaVE(n_epochs=3, batch_size=4, **cell).fit(Z, X_star, lp=lp) for cell in cells]
    together = CaVE.fit_many([CaVE(n_epochs=3, batch_size=4, **cell) for cell in cells], Z, X_star, lp=lp)
    for a, b in zip(separate, together):
        np.testing.assert_array_equal(a.coef_, b.coef_)
        assert a.n_projected_steps_ == b.n_projected_steps_ < a.n_steps_
