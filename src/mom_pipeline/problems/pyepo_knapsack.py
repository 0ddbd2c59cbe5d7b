"""The multi-dimensional knapsack of the decision-focused learning benchmark (PyEPO's
knapsack generator, Tang and Khalil), as its LP relaxation.

PyEPO's released generator draws, per data set, integer-cent weights w_ij ~ U{3.00, ..., 7.99}
for k resources and m items, B ~ Bernoulli(0.5) of shape (m, p) and features x ~ N(0, I_p),
and the item values

    v_j = ceil( 5 [((B x)_j / sqrt(p) + 3)^deg + 1] / 3.5^deg * eps_j ),   eps_j ~ U[1 - e, 1 + e],

integers >= 1. PyEPO's examples use k = 2 resources, m = 32 items and a capacity of 20 for each.
PyEPO solves the 0-1 knapsack  max v'x, W x <= cap, x binary  with an integer programming
solver; every method here, MOM included, works on the LP, so the benchmark solves the LP
relaxation (0 <= x <= 1; at most k items fractional at a vertex), in standard form
min c'x with c = (-v, 0 on the k resource slacks, 0 on the m bound slacks)
(`lp.MultiKnapsack`, exact batched oracle). Its regrets are therefore not PyEPO's 0-1 numbers.
"""

from __future__ import annotations

import numpy as np

from ..lp import MultiKnapsack, StandardFormLP
from .common import Samples, Trial, as_generator, check_noise


def pyepo_knapsack_values(X: np.ndarray, B: np.ndarray, degree: int, rng: np.random.Generator,
                          eps_bar: float = 0.0) -> np.ndarray:
    """Item values (T, m) of features X (T, p) (without a constant column) and B (m, p)."""
    p = X.shape[1]
    if B.shape[1] != p:
        raise ValueError(f"B has {B.shape[1]} columns but the features have {p}")
    signal = 5.0 * ((X @ B.T / np.sqrt(p) + 3.0) ** degree + 1.0) / 3.5**degree
    return np.ceil(signal * rng.uniform(1.0 - eps_bar, 1.0 + eps_bar, size=signal.shape))


def generate_multi_knapsack(n_train: int, n_test: int, degree: int = 1, eps_bar: float = 0.0, n_items: int = 32,
                            n_resources: int = 2, capacity: float = 20.0, n_features: int = 5, seed=0) -> Trial:
    """One trial of PyEPO's knapsack: weights, B, and train and test samples (features
    z = (x, 1), costs of the standard-form LP); the weights and B are shared by the trial's
    train and test samples, as PyEPO's are by one data set."""
    check_noise(degree, eps_bar, 0.0, 0.0)
    if n_train < 1 or n_test < 0:
        raise ValueError(f"n_train must be >= 1 and n_test >= 0; got {n_train}, {n_test}")
    if n_items < 1 or n_resources < 1 or n_features < 1 or not capacity > 0:
        raise ValueError(f"n_items, n_resources and n_features must be >= 1 and capacity > 0; got {n_items}, "
                         f"{n_resources}, {n_features}, {capacity}")
    rng = as_generator(seed)
    weights = rng.integers(300, 800, size=(n_resources, n_items)) / 100.0
    B = rng.binomial(1, 0.5, size=(n_items, n_features)).astype(float)
    structure = MultiKnapsack(weights=weights, capacities=np.full(n_resources, float(capacity)))
    lp = StandardFormLP.from_structure(structure)
    parts = []
    for size in (n_train, n_test):
        X = rng.normal(0.0, 1.0, size=(size, n_features))
        values = pyepo_knapsack_values(X, B, degree, rng, eps_bar)
        C = np.column_stack([-values, np.zeros((size, n_items + n_resources))])
        parts.append(Samples(Z=np.column_stack([X, np.ones(size)]), C=C))
    params = dict(problem="multi_knapsack", degree=degree, eps_bar=eps_bar, n_items=n_items,
                  n_resources=n_resources, capacity=capacity, n_features=n_features + 1)
    return Trial(lp=lp, V=B, train=parts[0], test=parts[1], params=params)
