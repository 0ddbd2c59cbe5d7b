"""Shortest path on a grid with contextual costs (paper appendix, after Elmachtoub & Grigas)."""

from __future__ import annotations

import numpy as np

from ..lp import GridShortestPath, StandardFormLP
from .common import Samples, Trial, as_generator, check_noise, noisy
from .pyepo_shortest_path import pyepo_shortest_path_costs

COST_FORMULAS = ("paper", "pyepo", "pyepo_printed")


def shortest_path_costs(Z: np.ndarray, V: np.ndarray, degree: int, rng: np.random.Generator, eps_bar: float = 0.0,
                        alpha_bar: float = 0.0, eta_bar: float = 0.0, attack_threshold: float = 0.5) -> np.ndarray:
    """c_j = [((V z)_j / sqrt(d) + 3)^deg + 1] * eps_j * alpha + eta_bar * eta_j, (T, n)."""
    d = Z.shape[1]
    signal = (Z @ V.T / np.sqrt(d) + 3.0) ** degree + 1.0
    return noisy(signal, Z, rng, eps_bar, alpha_bar, eta_bar, attack_threshold)


def generate_shortest_path(n_train: int, n_test: int, degree: int = 1, eps_bar: float = 0.0, alpha_bar: float = 0.0,
                           eta_bar: float = 0.0, grid: tuple[int, int] = (5, 5), n_features: int = 6,
                           attack_threshold: float = 0.5, cost_formula: str = "paper", seed=0) -> Trial:
    """One trial of the shortest-path experiment.

    Features z = (N(0,1)^(d-1), 1) (d includes the constant), V ~ Bernoulli(0.5) of shape
    (n_edges, d) drawn once for the trial; train and test share V and the grid.

    cost_formula="pyepo" draws the costs of the DFL benchmark instead, as PyEPO's generator
    computes them ("pyepo_printed": as its paper prints them; see `pyepo_shortest_path_costs`),
    with p = d - 1 features and B = V[:, :p] (V's constant column is zero) and only the
    multiplicative noise eps_bar.

    Returns:
        Trial with lp (A: 24 x 40 on the default 5x5 grid), V, train and test samples.
    """
    check_noise(degree, eps_bar, alpha_bar, eta_bar)
    if n_train < 1 or n_test < 0:
        raise ValueError(f"n_train must be >= 1 and n_test >= 0; got {n_train}, {n_test}")
    if n_features < 1:
        raise ValueError(f"n_features must be >= 1; got {n_features}")
    if cost_formula not in COST_FORMULAS:
        raise ValueError(f"cost_formula must be one of {COST_FORMULAS}; got {cost_formula!r}")
    pyepo = cost_formula.startswith("pyepo")
    if pyepo and (alpha_bar or eta_bar or n_features < 2):
        raise ValueError("cost_formula='pyepo' has no alpha_bar/eta_bar noise and needs n_features >= 2 "
                         f"(p = n_features - 1 plus the constant); got {alpha_bar}, {eta_bar}, {n_features}")
    rng = as_generator(seed)
    structure = GridShortestPath(*grid)
    lp = StandardFormLP.from_structure(structure)
    V = rng.binomial(1, 0.5, size=(structure.n_edges, n_features)).astype(float)
    if pyepo:
        V[:, -1] = 0.0  # B acts on the p = d - 1 random features only
    parts = []
    for size in (n_train, n_test):
        Z = np.column_stack([rng.standard_normal((size, n_features - 1)), np.ones(size)])
        if pyepo:
            C = pyepo_shortest_path_costs(Z[:, :-1], V[:, :-1], degree, rng, eps_bar,
                                          version="printed" if cost_formula == "pyepo_printed" else "released")
        else:
            C = shortest_path_costs(Z, V, degree, rng, eps_bar, alpha_bar, eta_bar, attack_threshold)
        parts.append(Samples(Z=Z, C=C))
    params = dict(problem="shortest_path", degree=degree, eps_bar=eps_bar, alpha_bar=alpha_bar, eta_bar=eta_bar,
                  grid=list(grid), n_features=n_features, attack_threshold=attack_threshold,
                  cost_formula=cost_formula)
    return Trial(lp=lp, V=V, train=parts[0], test=parts[1], params=params)
