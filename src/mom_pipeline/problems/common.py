"""Shared pieces of the paper's generators: contexts, noise models, the trial container."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lp import StandardFormLP


@dataclass(frozen=True, eq=False)
class Samples:
    """T samples of one trial: features Z (T, d) and true costs C (T, n)."""

    Z: np.ndarray
    C: np.ndarray

    def __len__(self) -> int:
        return self.Z.shape[0]

    def subset(self, index) -> "Samples":
        return Samples(Z=self.Z[index], C=self.C[index])


@dataclass(frozen=True, eq=False)
class Trial:
    """One trial: the LP family, the ground truth V (n_outputs, d) shared by the trial's
    train and test samples, and those samples."""

    lp: StandardFormLP
    V: np.ndarray
    train: Samples
    test: Samples
    params: dict


def as_generator(seed) -> np.random.Generator:
    """A numpy Generator from a seed, a SeedSequence or a Generator (returned as is)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def check_noise(degree: int, eps_bar: float, alpha_bar: float, eta_bar: float) -> None:
    if int(degree) != degree or degree < 1:
        raise ValueError(f"degree must be a positive integer; got {degree}")
    if not 0 <= eps_bar <= 1:
        raise ValueError(f"eps_bar must be in [0, 1]; got {eps_bar}")
    if alpha_bar < 0 or eta_bar < 0:
        raise ValueError(f"alpha_bar and eta_bar must be non-negative; got {alpha_bar}, {eta_bar}")


def noisy(signal: np.ndarray, Z: np.ndarray, rng: np.random.Generator, eps_bar: float, alpha_bar: float,
          eta_bar: float, attack_threshold: float) -> np.ndarray:
    """signal * eps * alpha + eta_bar * eta with the paper's noise models.

    eps_j ~ U[1 - eps_bar, 1 + eps_bar]; alpha = 1 + alpha_bar when z_1 > threshold, else 1
    (the scale attack, correlated with the first feature); 2 eta + 1 ~ Exp(1).
    """
    T, n = signal.shape
    eps = rng.uniform(1.0 - eps_bar, 1.0 + eps_bar, size=(T, n))
    alpha = np.where(Z[:, 0] > attack_threshold, 1.0 + alpha_bar, 1.0)[:, None]
    eta = (rng.exponential(1.0, size=(T, n)) - 1.0) / 2.0
    return signal * eps * alpha + eta_bar * eta
