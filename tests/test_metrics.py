"""Metrics against hand computations, the released code's literal expression and AM-HM."""

import numpy as np
import pandas as pd
import pytest

from mom_pipeline.lp import StandardFormLP, solve_lp_batch
from mom_pipeline.metrics import mean_skipping_nan, normalized_regret, normalized_regret_by, per_sample_metrics
from mom_pipeline.problems import generate_knapsack, generate_shortest_path


@pytest.fixture(scope="module")
def path_decisions():
    """True costs, HiGHS-optimal solutions and decisions from perturbed costs."""
    trial = generate_shortest_path(1, 80, degree=2, eps_bar=0.5, eta_bar=0.2, seed=7)
    C = trial.test.C
    generic = StandardFormLP(A=trial.lp.A, b=trial.lp.b)
    X_star = generic.solve(C).x
    C_hat = C + np.random.default_rng(0).normal(scale=1.5, size=C.shape)
    X_hat = trial.lp.solve(C_hat).x
    return C, C_hat, X_hat, X_star


def test_shortest_path_regret_and_relative_loss(path_decisions):
    C, C_hat, X_hat, X_star = path_decisions
    df = per_sample_metrics(C, X_hat, X_star, "shortest_path", C_hat=C_hat)
    regret = np.einsum("tj,tj->t", C, X_hat) - np.einsum("tj,tj->t", C, X_star)
    assert (C > 0).all() and (df["regret"] >= -1e-9).all() and (df["regret"] > 1e-6).any()
    np.testing.assert_allclose(df["regret"], regret, atol=1e-12)
    np.testing.assert_allclose(df["relative_loss"], regret / np.einsum("tj,tj->t", C, X_star), rtol=1e-12)
    np.testing.assert_allclose(df["prediction_loss"], ((C_hat - C) ** 2).sum(axis=1))
    suboptimality = np.einsum("tj,tj->t", C_hat, X_star - X_hat)
    np.testing.assert_allclose(df["suboptimality_loss"], suboptimality)
    assert (df["suboptimality_loss"] >= -1e-9).all()  # X_hat minimizes c_hat'x
    assert list(df.index) == list(range(len(C)))


def test_released_shortest_path_loss_is_the_literal_expression_and_at_least_64_times(path_decisions):
    C, _, X_hat, X_star = path_decisions
    df = per_sample_metrics(C, X_hat, X_star, "shortest_path")
    # The released code, evaluated left to right by numpy, one sample at a time.
    literal = np.array([c @ (x_hat - x_star) / c @ x_star for c, x_hat, x_star in zip(C, X_hat, X_star)])
    np.testing.assert_allclose(df["relative_loss_released"], literal, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(df["relative_loss_released"], df["regret"] * (X_star / C).sum(axis=1), rtol=1e-12)
    assert ((X_star > 0).sum(axis=1) == 8).all()  # every 5x5 path has 8 edges: AM-HM gives >= 64
    positive = df["regret"] > 1e-9
    assert positive.any()
    ratio = df.loc[positive, "relative_loss_released"] / df.loc[positive, "relative_loss"]
    assert (ratio >= 64 * (1 - 1e-12)).all()


def test_knapsack_relative_loss_is_utility_regret_over_norm():
    trial = generate_knapsack(1, 60, degree=1, eta_bar=0.5, seed=3)
    C = trial.test.C
    X_star = solve_lp_batch(trial.lp.A, trial.lp.b, C).x
    X_hat = trial.lp.solve(C + np.random.default_rng(1).normal(scale=0.5, size=C.shape)).x
    df = per_sample_metrics(C, X_hat, X_star, "knapsack")
    utility = -C  # the paper's c in Rel-Loss_FK = c'(x* - x)/||c||
    expected = np.einsum("tj,tj->t", utility, X_star - X_hat) / np.linalg.norm(utility, axis=1)
    np.testing.assert_allclose(df["relative_loss"], expected, rtol=1e-12, atol=1e-15)
    assert (df["relative_loss"] >= -1e-9).all() and (df["relative_loss"] > 1e-6).any()
    np.testing.assert_array_equal(df["relative_loss_released"], df["relative_loss"])


def test_exact_flags_for_identical_tied_and_wrong_decisions():
    trial = generate_shortest_path(1, 3, degree=1, seed=0)
    C = np.ones((3, trial.lp.n))  # every monotone path has length 8: all tie
    X_star = trial.lp.solve(C).x
    other_path = trial.lp.solve(1.0 + X_star).x  # a path avoiding the first one's edges
    assert not np.array_equal(other_path[0], X_star[0])
    X_hat = np.stack([X_star[0], other_path[1], other_path[2]])
    C[2] = np.where(other_path[2] > 0, 2.0, 1.0)  # sample 2: the other path is now worse
    X_star[2] = trial.lp.solve(C[2:]).x[0]
    df = per_sample_metrics(C, X_hat, X_star, "shortest_path")
    assert df["exact_solution"].tolist() == [True, False, False]
    assert df["exact_value"].tolist() == [True, True, False]
    assert df["exact"].tolist() == df["exact_value"].tolist()
    assert df.loc[2, "regret"] > 0


def test_non_finite_inputs_name_the_sample(path_decisions):
    C, C_hat, X_hat, X_star = path_decisions
    bad = X_hat.copy()
    bad[5, 3] = np.inf
    with pytest.raises(ValueError, match="X_hat: sample 5"):
        per_sample_metrics(C, bad, X_star, "shortest_path")
    bad_hat = C_hat.copy()
    bad_hat[2, 0] = np.nan
    with pytest.raises(ValueError, match="C_hat: sample 2"):
        per_sample_metrics(C, X_hat, X_star, "shortest_path", C_hat=bad_hat)
    with pytest.raises(ValueError, match="problem must be one of"):
        per_sample_metrics(C, X_hat, X_star, "tsp")
    with pytest.raises(ValueError, match="shape"):
        per_sample_metrics(C, X_hat[:, :5], X_star, "shortest_path")


def test_zero_optimal_length_gives_nan_relative_loss():
    C = np.array([[0.0, 1.0], [2.0, 1.0]])
    X_star = np.array([[1.0, 0.0], [0.0, 1.0]])
    X_hat = np.array([[0.0, 1.0], [1.0, 0.0]])
    df = per_sample_metrics(C, X_hat, X_star, "shortest_path")
    assert np.isnan(df.loc[0, "relative_loss"]) and df.loc[1, "relative_loss"] == pytest.approx(1.0)


def test_normalized_regret_by_group_by_hand():
    df = pd.DataFrame({
        "method": ["a", "a", "a", "b", "b"],
        "regret": [0.0, 1.0, 3.0, 0.5, 0.5],
        "optimal_value": [10.0, -10.0, 20.0, 5.0, 5.0],
    })
    grouped = normalized_regret_by(df, ["method"])
    assert grouped["a"] == pytest.approx(4.0 / 40.0) and grouped["b"] == pytest.approx(1.0 / 10.0)
    for method, part in df.groupby("method"):
        assert grouped[method] == pytest.approx(normalized_regret(part["regret"], part["optimal_value"]), rel=1e-15)


def test_normalized_regret():
    assert normalized_regret([1.0, 2.0], [-4.0, 8.0]) == pytest.approx(0.25)
    assert np.isnan(normalized_regret([0.0], [0.0]))


def test_mean_skipping_nan_is_pandas_mean_bit_for_bit():
    # tuning scores each grid cell by this mean; the chosen cell must not depend on how it is summed
    rng = np.random.default_rng(5)
    for i in range(300):
        values = rng.lognormal(-3.0, 2.0, int(rng.integers(1, 2000)))
        if i % 2:
            values[rng.random(values.size) < 0.2] = np.nan
        assert mean_skipping_nan(values) == pd.Series(values).mean()
    assert np.isnan(mean_skipping_nan(np.full(4, np.nan))) and np.isnan(pd.Series(np.full(4, np.nan)).mean())
