"""Fractional knapsack with contextual utilities (paper appendix, after Ho-Nguyen & Kilinc-Karzan)."""

from __future__ import annotations

import numpy as np

from ..lp import FractionalKnapsack, StandardFormLP
from .common import Samples, Trial, as_generator, check_noise, noisy

PRICE_MODES = ("integer", "uniform")


def knapsack_instance(n_items: int, rng: np.random.Generator, prices: str = "integer") -> FractionalKnapsack:
    """Prices integer in [1, 1000] (offline) or U[0, 1] (online); budget ~ U[low, high]
    with low = max p and high = sum p - u * low, u ~ U[0, 1]."""
    if prices not in PRICE_MODES:
        raise ValueError(f"prices must be one of {PRICE_MODES}; got {prices!r}")
    if prices == "integer":
        p = rng.integers(1, 1001, size=n_items).astype(float)
    else:
        # U(0, 1] so that every price is positive (the greedy divides by it).
        p = 1.0 - rng.uniform(0.0, 1.0, size=n_items)
    low = p.max()
    high = p.sum() - rng.uniform() * low
    budget = rng.uniform(low, max(low, high))
    return FractionalKnapsack(prices=tuple(p), budget=float(budget))


def knapsack_costs(Z: np.ndarray, V: np.ndarray, degree: int, rng: np.random.Generator, eps_bar: float = 0.0,
                   alpha_bar: float = 0.0, eta_bar: float = 0.0, attack_threshold: float = 0.5) -> np.ndarray:
    """Costs of the standard-form LP, (T, 2k + 1): c_x = -utility with
    utility_j = (V z)_j^deg * eps_j * alpha + eta_bar * eta_j, and 0 on the slacks."""
    T = Z.shape[0]
    k = V.shape[0]
    utility = noisy((Z @ V.T) ** degree, Z, rng, eps_bar, alpha_bar, eta_bar, attack_threshold)
    return np.column_stack([-utility, np.zeros((T, k + 1))])


def generate_knapsack(n_train: int, n_test: int, degree: int = 1, eps_bar: float = 0.0, alpha_bar: float = 0.0,
                      eta_bar: float = 0.0, n_items: int = 10, n_features: int = 5, feature_low: float = 0.0,
                      prices: str = "integer", attack_threshold: float = 0.5, seed=0) -> Trial:
    """One trial of the fractional-knapsack experiment.

    Features z = (U[feature_low, 1]^(d-1), 1): feature_low = 0 follows the paper's text,
    -1 the released code. V ~ Bernoulli(0.5) of shape (n_items, d), one price vector and
    budget per trial, shared by train and test. With degree 1 and no noise, c = Theta* z
    exactly (Theta* = -V on the items, 0 on the slacks): the separable online setting.
    """
    check_noise(degree, eps_bar, alpha_bar, eta_bar)
    if n_train < 1 or n_test < 0:
        raise ValueError(f"n_train must be >= 1 and n_test >= 0; got {n_train}, {n_test}")
    if not feature_low < 1:
        raise ValueError(f"feature_low must be < 1; got {feature_low}")
    rng = as_generator(seed)
    V = rng.binomial(1, 0.5, size=(n_items, n_features)).astype(float)
    structure = knapsack_instance(n_items, rng, prices)
    lp = StandardFormLP.from_structure(structure)
    parts = []
    for size in (n_train, n_test):
        Z = np.column_stack([rng.uniform(feature_low, 1.0, size=(size, n_features - 1)), np.ones(size)])
        C = knapsack_costs(Z, V, degree, rng, eps_bar, alpha_bar, eta_bar, attack_threshold)
        parts.append(Samples(Z=Z, C=C))
    params = dict(problem="knapsack", degree=degree, eps_bar=eps_bar, alpha_bar=alpha_bar, eta_bar=eta_bar,
                  n_items=n_items, n_features=n_features, feature_low=feature_low, prices=prices,
                  attack_threshold=attack_threshold)
    return Trial(lp=lp, V=V, train=parts[0], test=parts[1], params=params)
