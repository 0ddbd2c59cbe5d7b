"""Generators follow the paper's appendix and are deterministic in their seed."""

import numpy as np
import pytest

from mom_pipeline.problems import generate_knapsack, generate_multi_knapsack, generate_shortest_path, generate_trial


def test_shortest_path_noiseless_costs_follow_the_formula():
    trial = generate_shortest_path(100, 50, degree=4, seed=1)
    Z, C, V = trial.train.Z, trial.train.C, trial.V
    assert Z.shape == (100, 6) and C.shape == (100, 40) and V.shape == (40, 6)
    assert (Z[:, -1] == 1).all() and set(np.unique(V)) <= {0.0, 1.0}
    np.testing.assert_allclose(C, (Z @ V.T / np.sqrt(6) + 3) ** 4 + 1)
    # train and test share V: the test costs follow the same formula
    np.testing.assert_allclose(trial.test.C, (trial.test.Z @ V.T / np.sqrt(6) + 3) ** 4 + 1)


def test_scale_attack_multiplies_costs_when_z1_is_large():
    clean = generate_shortest_path(200, 0, degree=1, seed=7)
    attacked = generate_shortest_path(200, 0, degree=1, alpha_bar=3.0, seed=7)
    ratio = attacked.train.C / clean.train.C
    big = clean.train.Z[:, 0] > 0.5
    np.testing.assert_allclose(ratio[big], 4.0)
    np.testing.assert_allclose(ratio[~big], 1.0)


def test_knapsack_separable_and_feature_range():
    trial = generate_knapsack(100, 10, degree=1, prices="uniform", seed=2)
    np.testing.assert_allclose(trial.train.C[:, :10], -trial.train.Z @ trial.V.T)
    assert (trial.train.C[:, 10:] == 0).all()
    assert trial.train.Z[:, :-1].min() >= 0
    released = generate_knapsack(500, 0, feature_low=-1.0, seed=2)
    assert released.train.Z[:, :-1].min() < -0.5
    ks = trial.lp.structure
    assert max(ks.prices) <= ks.budget <= sum(ks.prices)
    integer = generate_knapsack(10, 0, seed=3).lp.structure
    assert all(float(p).is_integer() and 1 <= p <= 1000 for p in integer.prices)


def test_noise_models():
    trial = generate_knapsack(4000, 0, degree=1, eps_bar=0.5, eta_bar=0.0, seed=5)
    utility = -trial.train.C[:, :10]
    base = trial.train.Z @ trial.V.T
    ratio = utility[base > 0] / base[base > 0]
    assert 0.5 <= ratio.min() and ratio.max() <= 1.5 and ratio.std() > 0.2
    additive = generate_knapsack(4000, 0, degree=1, eta_bar=1.0, seed=5)
    eta = -additive.train.C[:, :10] - additive.train.Z @ additive.V.T
    assert eta.min() >= -0.5 and abs(eta.mean()) < 0.05  # (Exp(1) - 1) / 2 has mean 0


def test_determinism_and_dispatch():
    a = generate_trial("shortest_path", n_train=20, n_test=5, seed=11)
    b = generate_trial("shortest_path", n_train=20, n_test=5, seed=11)
    np.testing.assert_array_equal(a.train.C, b.train.C)
    c = generate_trial("shortest_path", n_train=20, n_test=5, seed=12)
    assert not np.array_equal(a.train.C, c.train.C)
    with pytest.raises(ValueError, match="unknown problem"):
        generate_trial("tsp", n_train=1, n_test=1)
    with pytest.raises(ValueError, match="degree"):
        generate_shortest_path(10, 10, degree=0)


@pytest.mark.parametrize("formula", ["pyepo", "pyepo_printed"])
def test_pyepo_costs_follow_the_benchmark_formula(formula):
    trial = generate_shortest_path(400, 10, degree=4, eps_bar=0.0, cost_formula=formula, seed=2)
    Z, V = trial.train.Z, trial.V
    assert np.all(V[:, -1] == 0) and set(np.unique(V[:, :-1])) <= {0.0, 1.0}  # B on the 5 random features
    powered = (Z[:, :5] @ V[:, :5].T / np.sqrt(5) + 3) ** 4
    expected = (powered + 1) / 3.5**4 if formula == "pyepo" else powered / 3.5**4 + 1
    np.testing.assert_allclose(trial.train.C, expected, rtol=1e-12)
    noisy = generate_shortest_path(4000, 0, degree=1, eps_bar=0.5, cost_formula=formula, seed=2)
    clean = generate_shortest_path(4000, 0, degree=1, eps_bar=0.0, cost_formula=formula, seed=2)
    ratio = noisy.train.C / clean.train.C  # eps ~ U[0.5, 1.5] multiplies every edge cost
    assert 0.5 <= ratio.min() < 0.52 and 1.48 < ratio.max() <= 1.5
    with pytest.raises(ValueError, match="cost_formula"):
        generate_shortest_path(5, 0, cost_formula="pyepo", eta_bar=0.5)


def test_multi_knapsack_follows_pyepo_generator():
    trial = generate_multi_knapsack(50, 20, degree=4, eps_bar=0.5, seed=7)
    W = trial.lp.structure.weights
    assert W.shape == (2, 32) and np.allclose(np.round(W * 100), W * 100, rtol=0, atol=1e-9) and W.min() >= 3 and W.max() <= 7.99
    np.testing.assert_array_equal(trial.lp.structure.capacities, [20.0, 20.0])
    X, C = trial.train.Z[:, :5], trial.train.C
    np.testing.assert_array_equal(trial.train.Z[:, 5], 1.0)
    values = -C[:, :32]
    assert np.all(values == np.ceil(values)) and values.min() >= 1
    assert (C[:, 32:] == 0).all() and C.shape == (50, 2 + 2 * 32)
    # v = ceil(5 [(B x / sqrt 5 + 3)^4 + 1] / 3.5^4 * eps), eps in [0.5, 1.5]
    signal = 5 * ((X @ trial.V.T / np.sqrt(5) + 3) ** 4 + 1) / 3.5**4
    assert np.all(values >= np.ceil(0.5 * signal - 1e-9)) and np.all(values <= np.ceil(1.5 * signal + 1e-9))
    noiseless = generate_multi_knapsack(50, 0, degree=2, seed=7)
    signal = 5 * ((noiseless.train.Z[:, :5] @ noiseless.V.T / np.sqrt(5) + 3) ** 2 + 1) / 3.5**2
    np.testing.assert_array_equal(-noiseless.train.C[:, :32], np.ceil(signal))
    same = generate_multi_knapsack(50, 20, degree=4, eps_bar=0.5, seed=7)
    np.testing.assert_array_equal(same.test.C, trial.test.C)
