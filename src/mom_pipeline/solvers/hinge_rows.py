"""The interface through which the hinge-QP solvers see their rows."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import scipy.sparse as sp


class HingeRowOperator(Protocol):
    """Products with the hinge rows H (n_rows x n_vars) without forming H."""

    n_vars: int
    n_rows: int

    def margins(self, w: np.ndarray) -> np.ndarray: """H w, (n_rows,)."""
    def weighted_sum(self, alpha: np.ndarray) -> np.ndarray: """H' alpha, (n_vars,)."""
    def gram(self, index: np.ndarray) -> np.ndarray: """H[index] H[index]', dense."""
    def gram_between(self, left: np.ndarray, right: np.ndarray) -> np.ndarray: """H[left] H[right]', dense."""
    def margins_of(self, index: np.ndarray, w: np.ndarray) -> np.ndarray: """H[index] w."""
    def weighted_sum_of(self, index: np.ndarray, beta: np.ndarray) -> np.ndarray: """H[index]' beta."""
    def dense_rows(self, index: np.ndarray) -> np.ndarray: """H[index], dense."""
    def rows(self, index: np.ndarray) -> sp.csr_matrix: """H[index], sparse."""
