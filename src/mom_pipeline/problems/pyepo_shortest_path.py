"""Shortest path costs of the decision-focused learning benchmark (PyEPO, Tang and Khalil).

On features x ~ N(0, I_p) and a Bernoulli(0.5) matrix B (n_edges, p), with s_j = (B x)_j /
sqrt(p) + 3 and eps_j ~ U[1 - e, 1 + e], two versions exist:

* ``printed`` (the formula as the PyEPO paper prints it):  c_j = [s_j^deg / 3.5^deg + 1] eps_j;
* ``released`` (what PyEPO's data generator computes, hence every number published from
  it):  c_j = [s_j^deg + 1] / 3.5^deg * eps_j.

They differ only in whether the "+ 1" is divided by 3.5^deg too. That matters: in the
released version the constant part of every edge cost is 1/3.5^deg (0.007 at degree 4), so
the costs vary relatively much more between contexts and regrets are several times larger
(at degree 4 without noise a least-squares fit scores about 0.007 normalized regret on
``printed`` data, several times that on ``released`` data). The LP is the same grid shortest
path (`problems.shortest_path`).
"""

from __future__ import annotations

import numpy as np


VERSIONS = ("released", "printed")


def pyepo_shortest_path_costs(X: np.ndarray, B: np.ndarray, degree: int, rng: np.random.Generator,
                              eps_bar: float = 0.0, version: str = "released") -> np.ndarray:
    """Costs (T, n_edges) of features X (T, p) (WITHOUT a constant column) and B (n_edges, p)."""
    p = X.shape[1]
    if B.shape[1] != p:
        raise ValueError(f"B has {B.shape[1]} columns but the features have {p}")
    if version not in VERSIONS:
        raise ValueError(f"version must be one of {VERSIONS}; got {version!r}")
    powered = (X @ B.T / np.sqrt(p) + 3.0) ** degree
    signal = (powered + 1.0) / 3.5**degree if version == "released" else powered / 3.5**degree + 1.0
    return signal * rng.uniform(1.0 - eps_bar, 1.0 + eps_bar, size=signal.shape)
