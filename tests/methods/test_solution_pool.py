"""NCE, CMAP and the learning-to-rank losses: gradients against finite differences, losses against a
per-sample reference, the pool growing with HiGHS-optimal decisions, noise-free recovery,
lockstep grids, determinism, bad inputs."""

import numpy as np
import pytest
from dfl_checks import noise_free_regrets
from finite_differences import central_differences

from mom_pipeline.lp import StandardFormLP, solve_lp_batch
from mom_pipeline.methods import CMAP, NCE, ListwiseLTR, PairwiseLTR, PointwiseLTR
from mom_pipeline.methods.solution_pool import (SolutionPool, cmap_loss, listwise_ltr_loss, nce_loss,
                                                pairwise_ltr_loss, pointwise_ltr_loss)
from mom_pipeline.problems import generate_shortest_path

LOSSES = {"nce": lambda W, C, X, S: nce_loss(W, X, S),
          "cmap": lambda W, C, X, S: cmap_loss(W, X, S),
          "pointwise": lambda W, C, X, S: pointwise_ltr_loss(W, C, S),
          "pairwise": lambda W, C, X, S: pairwise_ltr_loss(W, C, S, 0.05),
          "listwise": lambda W, C, X, S: listwise_ltr_loss(W, C, S, 0.3)}


def _reference(name, c_hat, c, x_star, S):
    """One sample's loss by its definition, pool member by pool member."""
    if name == "nce":
        return np.mean([c_hat @ x_star - c_hat @ s for s in S])
    if name == "cmap":
        return c_hat @ x_star - min(c_hat @ s for s in S)
    if name == "pointwise":
        return np.mean([(c_hat @ s - c @ s) ** 2 for s in S])
    if name == "pairwise":
        best = S[int(np.argmin([c @ s for s in S]))]
        pairs = [max(0.0, 0.05 + c_hat @ best - c_hat @ s) for s in S if c @ s > c @ best + 1e-9]
        return np.mean(pairs) if pairs else 0.0
    weights = np.exp([-(c @ s) / 0.3 for s in S])
    predicted = np.exp([-(c_hat @ s) / 0.3 for s in S])
    return -sum(w / weights.sum() * np.log(p / predicted.sum()) for w, p in zip(weights, predicted))


@pytest.fixture(scope="module")
def pooled():
    trial = generate_shortest_path(10, 0, degree=2, eps_bar=0.3, cost_formula="pyepo", seed=5)
    lp, C = trial.lp, trial.train.C
    rng = np.random.default_rng(0)
    X_star = lp.solve(C).x
    pool = SolutionPool(X_star)
    pool.add(lp.solve(np.repeat(C, 6, axis=0) + rng.normal(0, 0.5, (60, lp.n))).x)  # other paths
    C_hat = C + rng.normal(0, 0.3, C.shape)
    return C_hat, C, X_star, pool.solutions


@pytest.mark.parametrize("name", LOSSES)
def test_gradients_are_the_derivatives_of_the_losses(pooled, name):
    C_hat, C, X_star, S = pooled
    assert len(S) > 15
    loss, grad = LOSSES[name](C_hat, C, X_star, S)
    numeric = central_differences(lambda W: LOSSES[name](W, C, X_star, S)[0], C_hat)
    np.testing.assert_allclose(grad, numeric, atol=1e-6)
    reference = [_reference(name, C_hat[t], C[t], X_star[t], S) for t in range(len(C))]
    np.testing.assert_allclose(loss, reference, rtol=1e-10, atol=1e-12)


def test_the_ranking_losses_are_zero_where_they_should_be(pooled):
    _, C, X_star, S = pooled
    np.testing.assert_allclose(pointwise_ltr_loss(C, C, S)[0], 0.0, atol=1e-24)
    # x* is optimal for c: ranked first by a margin as large as the gap to the second best
    assert (pairwise_ltr_loss(3.0 * C, C, S, 1e-6)[0] == 0).all()
    assert (nce_loss(C, X_star, S)[0] <= 1e-12).all()  # c'x* <= c's for every feasible s
    # x* is in the pool: CMAP's loss is >= 0, and 0 exactly for costs under which x* is optimal
    np.testing.assert_allclose(cmap_loss(C, X_star, S)[0], 0.0, atol=1e-12)
    assert (cmap_loss(-C, X_star, S)[0] > 0.1).all()


def test_the_pool_grows_with_optimal_decisions_and_stays_feasible():
    trial = generate_shortest_path(40, 0, degree=4, eps_bar=0.5, cost_formula="pyepo", seed=8)
    lp, Z, C = trial.lp, trial.train.Z, trial.train.C
    X_star = lp.solve(C).x
    distinct = len(np.unique(X_star, axis=0))
    pool = SolutionPool(X_star)
    assert len(pool) == distinct
    pool.add(X_star + 1e-12)  # the same solutions up to round-off: no new member
    assert len(pool) == distinct
    frozen = PairwiseLTR(n_epochs=2, solve_ratio=0.0).fit(Z, X_star, lp=lp, C=C)
    grown = PairwiseLTR(n_epochs=2, solve_ratio=1.0, step_size=0.1).fit(Z, X_star, lp=lp, C=C)
    assert frozen.pool_size_ == distinct < grown.pool_size_
    # what joins the pool are the batches' decisions: optimal for the predicted costs (HiGHS)
    C_hat = grown.predict_cost(Z)
    found = lp.solve(C_hat, need_basis=False).x
    reference = solve_lp_batch(lp.A, lp.b, C_hat).objective
    np.testing.assert_allclose(np.einsum("tj,tj->t", C_hat, found), reference, atol=1e-9)
    pool.add(found)
    assert np.abs(pool.solutions @ lp.A.T - lp.b).max() < 1e-12 and pool.solutions.min() >= 0


def test_the_pool_keeps_its_first_members_in_order_as_it_grows():
    rng = np.random.default_rng(3)
    batches = [rng.integers(0, 3, (size, 5)) / 2 for size in (2, 7, 1, 40, 13)]  # repeats across and within batches
    pool = SolutionPool(batches[0])
    views = [pool.solutions]
    for batch in batches[1:]:
        pool.add(batch)
        views.append(pool.solutions)
    seen, expected = set(), []
    for x in np.concatenate(batches):
        if tuple(x) not in seen:
            seen.add(tuple(x))
            expected.append(x)
    np.testing.assert_array_equal(pool.solutions, np.asarray(expected))
    assert len(pool) == len(expected) > len(batches[0])
    for view in views:  # a view read before the pool grew still holds the members of its time
        np.testing.assert_array_equal(view, np.asarray(expected[:len(view)]))
    with pytest.raises(ValueError, match="read-only"):
        pool.solutions[0, 0] = 5.0


@pytest.mark.parametrize("model, bound", [(NCE(n_epochs=30, step_size=0.05), 0.01),
                                          (CMAP(n_epochs=30, step_size=0.05), 0.002),
                                          (PointwiseLTR(n_epochs=30, step_size=0.05), 0.002),
                                          (PairwiseLTR(n_epochs=30, step_size=0.05, margin=0.1), 0.002),
                                          (ListwiseLTR(n_epochs=30, step_size=0.05, temperature=0.1), 0.01)])
def test_noise_free_linear_decisions_are_recovered(model, bound):
    # measured: NCE 0.0057, CMAP 0.0006, pointwise 0.0000, pairwise 0.0002, listwise 0.0016 normalized
    # regret, against 0.05 for a zero model
    regret, zero_regret = noise_free_regrets(model)
    assert regret < bound < 0.02 < zero_regret
    assert model.loss_history_.shape == (30 * 10,)
    assert model.loss_history_[-20:].mean() < model.loss_history_[:5].mean()


@pytest.mark.parametrize("cls, cells", [
    (NCE, [dict(step_size=a, lam=l) for a in (0.01, 0.1) for l in (0.0, 0.1)]),
    (CMAP, [dict(step_size=a, lam=l) for a in (0.01, 0.1) for l in (0.0, 0.1)]),
    (PairwiseLTR, [dict(step_size=a, margin=m) for a in (0.01, 0.1) for m in (0.05, 0.5)]),
    (ListwiseLTR, [dict(step_size=a, temperature=t) for a in (0.01, 0.1) for t in (0.1, 1.0)]),
    (PointwiseLTR, [dict(step_size=a, solve_ratio=r) for a in (0.01, 0.1) for r in (0.5, 1.0)]),
])
def test_grid_in_lockstep_equals_separate_fits_and_fits_are_seeded(cls, cells):
    trial = generate_shortest_path(12, 0, degree=2, eps_bar=0.3, cost_formula="pyepo", seed=5)
    lp, Z, C = trial.lp, trial.train.Z, trial.train.C
    X_star = lp.solve(C).x
    cells = cells + [dict(cells[0], batch_size=5)]
    separate = [cls(n_epochs=3, **{"batch_size": 4, **cell}).fit(Z, X_star, lp=lp, C=C) for cell in cells]
    together = cls.fit_many([cls(n_epochs=3, **{"batch_size": 4, **cell}) for cell in cells], Z, X_star, lp=lp, C=C)
    for a, b in zip(separate, together):
        np.testing.assert_array_equal(a.coef_, b.coef_)
        np.testing.assert_allclose(a.loss_history_, b.loss_history_, rtol=1e-12)
        assert a.pool_size_ == b.pool_size_
    fit = lambda seed: cls(n_epochs=2, random_state=seed, solve_ratio=0.5).fit(Z, X_star, lp=lp, C=C).coef_
    np.testing.assert_array_equal(fit(1), fit(1))
    assert not np.array_equal(fit(1), fit(2))


def test_nce_never_reads_costs_and_bad_inputs_are_named():
    trial = generate_shortest_path(12, 0, degree=2, eps_bar=0.3, cost_formula="pyepo", seed=5)
    lp, Z, C = trial.lp, trial.train.Z, trial.train.C
    X_star = lp.solve(C).x
    assert not NCE.needs_costs and not CMAP.needs_costs and PointwiseLTR.needs_costs and PairwiseLTR.needs_costs and ListwiseLTR.needs_costs
    np.testing.assert_array_equal(NCE(n_epochs=2).fit(Z, X_star, lp=lp).coef_,
                                  NCE(n_epochs=2).fit(Z, X_star, lp=lp, C=np.full_like(C, np.nan)).coef_)
    np.testing.assert_array_equal(CMAP(n_epochs=2).fit(Z, X_star, lp=lp).coef_,
                                  CMAP(n_epochs=2).fit(Z, X_star, lp=lp, C=np.full_like(C, np.nan)).coef_)
    with pytest.raises(ValueError, match="'solve_ratio' parameter of NCE must be a float in the range"):
        NCE(solve_ratio=1.5).fit(Z, X_star, lp=lp)
    with pytest.raises(ValueError, match="'margin' parameter of PairwiseLTR must be"):
        PairwiseLTR(margin=0.0).fit(Z, X_star, lp=lp, C=C)
    with pytest.raises(ValueError, match="'temperature' parameter of ListwiseLTR must be"):
        ListwiseLTR(temperature=-1.0).fit(Z, X_star, lp=lp, C=C)
    per_sample = StandardFormLP(A=np.repeat(lp.A[None], len(C), axis=0), b=np.repeat(lp.b[None], len(C), axis=0))
    with pytest.raises(ValueError, match="NCE needs constraints shared by every sample"):
        NCE().fit(Z, X_star, lp=per_sample)
