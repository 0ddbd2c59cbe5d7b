"""Baselines against closed forms, cvxpy, HiGHS and the SPO+ loss's defining properties."""

import re

import cvxpy as cp
import numpy as np
import pytest
from sklearn.base import clone

from mom_pipeline.lp import StandardFormLP, solve_lp_batch
from mom_pipeline.methods.base import MissingCostsError
from mom_pipeline.methods.baselines import (
    OLS,
    KernelRidgeCost,
    RandomForest,
    Ridge,
    SPOPlus,
    slack_columns,
    spo_plus_loss,
)
from mom_pipeline.metrics import sample_metric_columns
from mom_pipeline.methods.registry import METHODS
from mom_pipeline.problems import generate_knapsack, generate_shortest_path


@pytest.fixture(scope="module")
def noisy_path():
    return generate_shortest_path(60, 40, degree=2, eps_bar=0.5, eta_bar=0.5, seed=3)


def test_ols_matches_numpy_least_squares(noisy_path):
    Z, C = noisy_path.train.Z, noisy_path.train.C
    model = OLS().fit(Z, lp=noisy_path.lp, C=C)
    reference = np.linalg.lstsq(Z, C, rcond=None)[0].T
    np.testing.assert_allclose(model.coef_, reference, atol=1e-9)
    np.testing.assert_allclose(model.predict_cost(noisy_path.test.Z), noisy_path.test.Z @ reference.T, atol=1e-8)


@pytest.mark.parametrize("lam", [1e-3, 1.0, 50.0])
def test_ridge_matches_closed_form(noisy_path, lam):
    Z, C = noisy_path.train.Z, noisy_path.train.C
    model = Ridge(lam=lam).fit(Z, C=C)
    # Stationarity of (1/2) sum ||Theta z - c||^2 + (lam/2)||Theta||^2: Theta (Z'Z + lam I) = C'Z.
    reference = np.linalg.solve(Z.T @ Z + lam * np.eye(Z.shape[1]), Z.T @ C).T
    np.testing.assert_allclose(model.coef_, reference, atol=1e-8)


def test_ridge_lambda_is_the_stated_loss_by_cvxpy():
    rng = np.random.default_rng(0)
    T, d, n, lam = 25, 4, 3, 7.0
    Z, C = rng.standard_normal((T, d)), rng.standard_normal((T, n))
    theta = cp.Variable((n, d))
    loss = 0.5 * cp.sum_squares(Z @ theta.T - C) + lam / 2 * cp.sum_squares(theta)
    cp.Problem(cp.Minimize(loss)).solve(solver=cp.CLARABEL)
    np.testing.assert_allclose(Ridge(lam=lam).fit(Z, C=C).coef_, theta.value, atol=1e-6)


def test_poly_kernel_ridge_uses_the_papers_kernel(noisy_path):
    Z, C, Z_new = noisy_path.train.Z, noisy_path.train.C, noisy_path.test.Z
    lam, degree, gamma = 0.3, 3, 2.5
    K = (Z @ Z.T / gamma + 1) ** degree
    dual = np.linalg.solve(K + lam * np.eye(len(Z)), C)
    expected = (Z_new @ Z.T / gamma + 1) ** degree @ dual
    model = KernelRidgeCost(kernel="poly", lam=lam, degree=degree, gamma=gamma).fit(Z, C=C)
    np.testing.assert_allclose(model.predict_cost(Z_new), expected, rtol=1e-6, atol=1e-6)


def test_rbf_kernel_ridge_uses_the_papers_squared_kernel(noisy_path):
    Z, C, Z_new = noisy_path.train.Z, noisy_path.train.C, noisy_path.test.Z
    lam, gamma = 0.1, 4.0

    def kernel(U, W):
        return np.exp(-((U[:, None, :] - W[None, :, :]) ** 2).sum(-1) / gamma)

    dual = np.linalg.solve(kernel(Z, Z) + lam * np.eye(len(Z)), C)
    model = KernelRidgeCost(kernel="rbf", lam=lam, gamma=gamma).fit(Z, C=C)
    np.testing.assert_allclose(model.predict_cost(Z_new), kernel(Z_new, Z) @ dual, rtol=1e-6, atol=1e-6)
    assert clone(model).get_params() == model.get_params()


def test_rbf_kernel_ridge_with_the_released_codes_unsquared_kernel(noisy_path):
    """rbf_norm="unsquared" is exp(-||z - z'|| / gamma); in one grid with squared cells, each
    cell keeps its own kernel (fit_many groups by the norm)."""
    Z, C, Z_new = noisy_path.train.Z, noisy_path.train.C, noisy_path.test.Z
    lam, gamma = 0.1, 4.0
    distance = lambda U, W: np.sqrt(((U[:, None, :] - W[None, :, :]) ** 2).sum(-1))  # noqa: E731
    unsquared = lambda U, W: np.exp(-distance(U, W) / gamma)  # noqa: E731
    squared = lambda U, W: np.exp(-distance(U, W) ** 2 / gamma)  # noqa: E731
    models = [KernelRidgeCost(kernel="rbf", lam=lam, gamma=gamma, rbf_norm=norm) for norm in ("unsquared", "squared")]
    KernelRidgeCost.fit_many(models, Z, C=C)
    for model, kernel in zip(models, (unsquared, squared)):
        dual = np.linalg.solve(kernel(Z, Z) + lam * np.eye(len(Z)), C)
        np.testing.assert_allclose(model.predict_cost(Z_new), kernel(Z_new, Z) @ dual, rtol=1e-6, atol=1e-6)
    assert not np.allclose(models[0].predict_cost(Z_new), models[1].predict_cost(Z_new))
    with pytest.raises(ValueError, match="rbf_norm"):
        KernelRidgeCost(kernel="rbf", rbf_norm="cubed").fit(Z, C=C)


def test_random_forest_is_multi_output_and_seeded(noisy_path):
    Z, C = noisy_path.train.Z, noisy_path.train.C
    first = RandomForest(n_estimators=10, random_state=1).fit(Z, C=C).predict_cost(noisy_path.test.Z)
    again = RandomForest(n_estimators=10, random_state=1).fit(Z, C=C).predict_cost(noisy_path.test.Z)
    other = RandomForest(n_estimators=10, random_state=2).fit(Z, C=C).predict_cost(noisy_path.test.Z)
    assert first.shape == noisy_path.test.C.shape
    np.testing.assert_array_equal(first, again)
    assert not np.allclose(first, other)
    # A fully grown forest with bootstrap averages training targets: predictions stay in their range.
    assert (first >= C.min(axis=0) - 1e-12).all() and (first <= C.max(axis=0) + 1e-12).all()


@pytest.mark.parametrize("name", sorted(name for name, entry in METHODS.items() if entry.needs_costs))
def test_every_baseline_needs_costs(noisy_path, name):
    model = METHODS[name].cls()
    assert model.needs_costs
    X_star = noisy_path.lp.solve(noisy_path.train.C).x
    with pytest.raises(MissingCostsError, match="needs the true costs"):
        model.fit(noisy_path.train.Z, X_star, lp=noisy_path.lp)


def test_scale_attack_changes_ols_decisions_but_not_the_optimal_solutions():
    trial = generate_shortest_path(200, 100, degree=1, seed=5)
    Z, C = trial.train.Z, trial.train.C
    factor = 1.0 + 3.0 * (Z[:, 0] > 0.5)
    scaled = C * factor[:, None]
    # Each c_t scaled by its own positive factor keeps every optimal solution (what MOM sees)...
    np.testing.assert_array_equal(trial.lp.solve(scaled).x, trial.lp.solve(C).x)
    # ...but moves the regression target, hence OLS's decisions.
    plain = OLS().fit(Z, C=C).decide(trial.test.Z, trial.lp).x
    attacked = OLS().fit(Z, C=scaled).decide(trial.test.Z, trial.lp).x
    assert (np.abs(plain - attacked).max(axis=1) > 0.5).any()


# ----------------------------------------------------------------------------- SPO+


@pytest.fixture(scope="module")
def knapsack_generic():
    """A knapsack trial and the same LPs without the oracle (HiGHS as the independent reference)."""
    trial = generate_knapsack(30, 1, degree=1, eta_bar=0.3, seed=2)
    return trial, StandardFormLP(A=trial.lp.A, b=trial.lp.b)


def _spo_loss_highs(C_hat, C, X_star, A, b):
    C_tilde = 2 * C_hat - C
    return np.einsum("tj,tj->t", C_tilde, X_star) - solve_lp_batch(A, b, C_tilde).objective


def test_spo_plus_subgradient_and_loss_against_highs(knapsack_generic):
    trial, generic = knapsack_generic
    C = trial.train.C
    X_star = solve_lp_batch(generic.A, generic.b, C).x
    C_hat = np.random.default_rng(0).standard_normal(C.shape) * 3
    loss, grad = spo_plus_loss(C_hat, C, X_star, trial.lp)
    x_tilde = solve_lp_batch(generic.A, generic.b, 2 * C_hat - C).x
    np.testing.assert_allclose(grad, 2 * (X_star - x_tilde), atol=1e-7)
    np.testing.assert_allclose(loss, _spo_loss_highs(C_hat, C, X_star, generic.A, generic.b), rtol=1e-8, atol=1e-7)
    assert (loss >= -1e-9).all() and (loss > 1e-6).any()
    # SPO+(c, c) = 0.
    np.testing.assert_allclose(spo_plus_loss(C, C, X_star, trial.lp)[0], 0.0, atol=1e-8)


def test_spo_plus_subgradient_inequality_and_finite_differences(knapsack_generic):
    trial, generic = knapsack_generic
    C = trial.train.C
    X_star = trial.lp.solve(C).x
    rng = np.random.default_rng(1)
    C1, C2 = rng.standard_normal(C.shape), rng.standard_normal(C.shape)
    loss1, grad1 = spo_plus_loss(C1, C, X_star, trial.lp)
    loss2 = _spo_loss_highs(C2, C, X_star, generic.A, generic.b)
    assert (loss2 >= loss1 + np.einsum("tj,tj->t", grad1, C2 - C1) - 1e-7).all()
    # Random continuous costs have a unique minimizer of (2 c_hat - c)'x, where the loss is
    # locally linear with gradient 2 (x* - x_tilde): central differences match it.
    direction = rng.standard_normal(C.shape)
    h = 1e-6
    slope = (_spo_loss_highs(C1 + h * direction, C, X_star, generic.A, generic.b)
             - _spo_loss_highs(C1 - h * direction, C, X_star, generic.A, generic.b)) / (2 * h)
    np.testing.assert_allclose(slope, np.einsum("tj,tj->t", grad1, direction), rtol=1e-4, atol=1e-4)


def _mean_relative_loss(trial, X_hat):
    C = trial.test.C
    optimum = trial.lp.solve(C)
    return float((np.einsum("tj,tj->t", C, X_hat - optimum.x) / optimum.objective).mean())


def test_spo_plus_learns_a_noiseless_linear_shortest_path():
    trial = generate_shortest_path(200, 200, degree=1, seed=0)
    Z, C = trial.train.Z, trial.train.C
    spo = SPOPlus(n_steps=400, random_state=0).fit(Z, lp=trial.lp, C=C)
    spo_loss = _mean_relative_loss(trial, spo.decide(trial.test.Z, trial.lp).x)
    ols_loss = _mean_relative_loss(trial, OLS().fit(Z, C=C).decide(trial.test.Z, trial.lp).x)
    zero_loss = _mean_relative_loss(trial, trial.lp.solve(np.zeros_like(trial.test.C)).x)
    assert ols_loss < 1e-9  # the data are exactly linear in z
    assert zero_loss > 0.05
    assert spo_loss < 0.005 and spo_loss < zero_loss / 10
    assert spo.loss_history_.shape == (400,)
    assert spo.loss_history_[-100:].mean() < spo.loss_history_[:10].mean()


def test_slack_columns_are_found_only_when_every_row_has_one():
    knapsack = generate_knapsack(3, 0, degree=1, seed=0).lp.A  # (x_1..x_10, s1, s2_1..s2_10)
    np.testing.assert_array_equal(slack_columns(knapsack), np.arange(10, 21))
    np.testing.assert_array_equal(slack_columns(np.stack([knapsack, 2 * knapsack])), np.arange(10, 21))
    assert slack_columns(generate_shortest_path(3, 0, degree=1, seed=0).lp.A) is None  # arcs into the last node
    moved = knapsack.copy()
    moved[[0, 1], 11] = moved[[1, 0], 11]  # column 11 is a unit column of another row in this sample
    assert slack_columns(np.stack([knapsack, moved])) is None


def test_spo_plus_loss_is_invariant_along_the_rows_of_A(knapsack_generic):
    """c_hat and c_hat + A'y decide alike and have the same SPO+ loss: costs on the slacks can be
    moved onto the other columns, which is what `cost_columns="non_slack"` relies on."""
    trial, _ = knapsack_generic
    C = trial.train.C
    X_star = trial.lp.solve(C).x
    rng = np.random.default_rng(2)
    C_hat = rng.standard_normal(C.shape)
    shifted = C_hat + rng.standard_normal((len(C), trial.lp.m)) @ trial.lp.A
    np.testing.assert_allclose(spo_plus_loss(shifted, C, X_star, trial.lp)[0], spo_plus_loss(C_hat, C, X_star, trial.lp)[0],
                               atol=1e-8)


def test_spo_plus_learns_a_noiseless_linear_knapsack_almost_exactly():
    """Figure 6 at degree 1 in small: integer prices make the budget slack thousands, and SGD on
    every column (cost_columns="all") stays far from the optimal decisions; on the items alone it
    is almost exact, as least squares is."""
    trial = generate_knapsack(200, 200, degree=1, feature_low=-1.0, seed=6)
    Z, C, lp = trial.train.Z, trial.train.C, trial.lp
    X_star = lp.solve(C).x

    def test_loss(model):
        X_hat = model.decide(trial.test.Z, lp).x
        return sample_metric_columns(trial.test.C, X_hat, lp.solve(trial.test.C).x, "knapsack")["relative_loss"].mean()

    items_only, every_column = SPOPlus.fit_many([SPOPlus(lam=1e-6, step_size=0.1, n_steps=300),
                                                 SPOPlus(lam=1e-6, step_size=0.1, n_steps=300, cost_columns="all")],
                                                Z, X_star, lp=lp, C=C)
    assert test_loss(OLS().fit(Z, C=C)) < 1e-9
    assert test_loss(items_only) < 1e-4  # 4e-6 here
    assert test_loss(every_column) > 0.05  # 0.33
    assert not items_only.coef_[10:].any() and every_column.coef_[10:].any()


def _count_oracle_calls(monkeypatch) -> list:
    """The number of cost vectors of every `StandardFormLP.solve` call from now on."""
    calls = []
    original = StandardFormLP.solve

    def counting_solve(self, C, method="auto", need_basis=True):
        calls.append(np.shape(C)[0])
        return original(self, C, method, need_basis)

    monkeypatch.setattr(StandardFormLP, "solve", counting_solve)
    return calls


def test_spo_plus_batches_its_oracle_calls(monkeypatch):
    trial = generate_shortest_path(40, 0, degree=1, seed=1)
    calls = _count_oracle_calls(monkeypatch)
    model = SPOPlus(n_steps=30, batch_size=7).fit(trial.train.Z, lp=trial.lp, C=trial.train.C)
    assert calls == [40] + [7] * 30  # X* once for all samples, then one batched call a step
    assert model.n_oracle_calls_ == 31
    X_star = trial.lp.solve(trial.train.C).x
    calls.clear()
    epochs = SPOPlus(n_epochs=2, batch_size=16).fit(trial.train.Z, X_star, lp=trial.lp, C=trial.train.C)
    assert calls == [16, 16, 8] * 2 and epochs.n_oracle_calls_ == 6


def test_spo_plus_is_deterministic_given_random_state():
    trial = generate_shortest_path(50, 0, degree=2, eta_bar=0.5, seed=4)
    fit = lambda seed: SPOPlus(n_steps=50, random_state=seed).fit(trial.train.Z, lp=trial.lp, C=trial.train.C)
    np.testing.assert_array_equal(fit(3).coef_, fit(3).coef_)
    assert not np.array_equal(fit(3).coef_, fit(4).coef_)


def test_spo_plus_first_step_from_zero_by_hand():
    # From Theta = 0, c_tilde = -c, so x_tilde maximizes c'x and the step is
    # -step * mean_t 2 (x*_t - x_tilde_t) z_t' (no regularization pull at Theta = 0).
    trial = generate_shortest_path(5, 0, degree=1, seed=6)
    Z, C = trial.train.Z, trial.train.C
    model = SPOPlus(n_steps=1, batch_size=5, step_size=0.3).fit(Z, lp=trial.lp, C=C)
    X_star = trial.lp.solve(C).x
    x_tilde = trial.lp.solve(-C).x
    np.testing.assert_allclose(model.coef_, -0.3 * 2 * (X_star - x_tilde).T @ Z / 5, atol=1e-12)


def test_bad_inputs_are_named():
    trial = generate_shortest_path(10, 0, degree=1, seed=0)
    C = trial.train.C.copy()
    C[4, 2] = np.nan
    with pytest.raises(ValueError, match="sample 4"):
        OLS().fit(trial.train.Z, C=C)
    with pytest.raises(ValueError, match=r"C must be \(10, 40\)"):
        SPOPlus().fit(trial.train.Z, lp=trial.lp, C=trial.train.C[:, :5])


def test_spo_plus_grid_in_lockstep_equals_separate_fits(monkeypatch):
    """fit_many runs the cells that share their batches with one oracle call a step and ends
    exactly where each cell's own fit ends; other batch settings form their own group."""
    trial = generate_knapsack(60, 0, degree=2, eps_bar=0.3, eta_bar=0.5, seed=8)
    Z, C, lp = trial.train.Z, trial.train.C, trial.lp
    X_star = lp.solve(C).x
    cells = [dict(lam=lam, step_size=step) for lam in (1e-6, 1e-2) for step in (1e-2, 1.0)]
    cells.append(dict(lam=1e-3, step_size=0.1, batch_size=3))
    separate = [SPOPlus(n_steps=40, **cell).fit(Z, X_star, lp=lp, C=C) for cell in cells]
    calls = _count_oracle_calls(monkeypatch)
    together = SPOPlus.fit_many([SPOPlus(n_steps=40, **cell) for cell in cells], Z, X_star, lp=lp, C=C)
    assert sorted(set(calls)) == [3, 4 * 5]  # a group of four cells (batch 5) and one of batch 3
    assert len(calls) == 2 * 40
    for a, b in zip(separate, together):
        np.testing.assert_array_equal(a.coef_, b.coef_)
        np.testing.assert_allclose(a.loss_history_, b.loss_history_, rtol=1e-12)
        assert b.n_oracle_calls_ == 40


def test_spo_plus_grid_survives_a_cell_whose_doubled_costs_overflow():
    """A cell whose predicted costs are finite but overflow in the oracle's 2 c_hat - c leaves the
    lockstep as diverged; before, the batched oracle raised for the whole grid (figure 6 on U[0,1]
    features, lam 10-100 with steps 1-10), which grid_search then fitted cell by cell."""
    trial = generate_knapsack(60, 0, degree=1, eps_bar=0.0, feature_low=0.0, seed=3)
    Z, C, lp = trial.train.Z, trial.train.C, trial.lp
    X_star = lp.solve(C).x
    cells = [dict(lam=lam, step_size=step) for lam in (10.0, 100.0) for step in (1.0, 10.0)]
    together = SPOPlus.fit_many([SPOPlus(**cell) for cell in cells], Z, X_star, lp=lp, C=C)
    failed = [getattr(model, "fit_error_", None) is not None for model in together]
    assert failed == [False, True, True, True]
    assert all("diverged" in str(model.fit_error_) for model, bad in zip(together, failed) if bad)
    # the step it left the lockstep at (the iterate grows ~1000x per step at lam 100, step 10),
    # not the last step, which the message named before
    step = int(re.search(r"diverged at step (\d+) of (\d+)", str(together[3].fit_error_)).group(1))
    assert 0 < step < 500 < together[3].n_steps
    alone = SPOPlus(**cells[0]).fit(Z, X_star, lp=lp, C=C)
    np.testing.assert_array_equal(alone.coef_, together[0].coef_)
    with pytest.raises(FloatingPointError, match="diverged"):
        SPOPlus(**cells[1]).fit(Z, X_star, lp=lp, C=C)
