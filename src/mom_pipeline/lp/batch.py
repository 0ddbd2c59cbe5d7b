"""Standard-form LP batches  min c'x  s.t.  A x = b, x >= 0  with validation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import as_float_array, check_finite
from .errors import LPInputError


class ConstraintShape:
    """m (rows) and n (columns) of constraint matrices A, (m, n) shared or (T, m, n) per sample."""

    A: np.ndarray

    @property
    def m(self) -> int:
        return self.A.shape[-2]

    @property
    def n(self) -> int:
        return self.A.shape[-1]


@dataclass(frozen=True)
class LPBatch(ConstraintShape):
    """A validated batch of T standard-form LPs.

    A is (m, n) when the constraints are shared by every sample, else (T, m, n);
    b is (m,) when shared, else (T, m); C is (T, n) or None.
    """

    A: np.ndarray
    b: np.ndarray
    C: np.ndarray | None
    n_samples: int

    @property
    def shared_A(self) -> bool:
        return self.A.ndim == 2

    @property
    def shared_b(self) -> bool:
        return self.b.ndim == 1

    def A_of(self, t: int) -> np.ndarray:
        """Constraint matrix of sample t, (m, n)."""
        return self.A if self.shared_A else self.A[t]

    def b_of(self, t: int) -> np.ndarray:
        """Right-hand side of sample t, (m,)."""
        return self.b if self.shared_b else self.b[t]

    def A_stack(self) -> np.ndarray:
        """Constraints as a (T, m, n) view (broadcast, no copy when shared)."""
        if self.shared_A:
            return np.broadcast_to(self.A, (self.n_samples, self.m, self.n))
        return self.A

    def b_stack(self) -> np.ndarray:
        """Right-hand sides as a (T, m) view."""
        if self.shared_b:
            return np.broadcast_to(self.b, (self.n_samples, self.m))
        return self.b


def as_lp_batch(A, b, C=None, n_samples: int | None = None, check_rank: bool = False) -> LPBatch:
    """Validate shapes and finiteness and return an :class:`LPBatch`.

    Args:
        A: (m, n) shared or (T, m, n) per sample.
        b: (m,) shared or (T, m) per sample.
        C: (T, n) costs, optional.
        n_samples: T when neither A, b nor C carries it.
        check_rank: also require every A to have full row rank m (needed for bases).
    """
    A = as_float_array("A", A, LPInputError)
    b = as_float_array("b", b, LPInputError)
    if A.ndim not in (2, 3):
        raise LPInputError(f"A must be (m, n) or (T, m, n); got shape {A.shape}")
    if b.ndim not in (1, 2):
        raise LPInputError(f"b must be (m,) or (T, m); got shape {b.shape}")
    m, n = A.shape[-2:]
    if m == 0 or n == 0:
        raise LPInputError(f"A must have at least one row and one column; got shape {A.shape}")
    if m > n:
        raise LPInputError(f"A has more rows than columns ({m} > {n}); drop redundant rows first")
    if b.shape[-1] != m:
        raise LPInputError(f"b has {b.shape[-1]} entries per sample but A has {m} rows")
    counts = {}
    if A.ndim == 3:
        counts["A"] = A.shape[0]
    if b.ndim == 2:
        counts["b"] = b.shape[0]
    if C is not None:
        C = as_float_array("C", C, LPInputError)
        if C.ndim == 1:
            C = C[None, :]
        if C.ndim != 2 or C.shape[1] != n:
            raise LPInputError(f"C must be (T, {n}) to match A with {n} columns; got shape {C.shape}")
        counts["C"] = C.shape[0]
    if n_samples is not None:
        counts["n_samples"] = int(n_samples)
    if len(set(counts.values())) > 1:
        raise LPInputError(f"inconsistent numbers of samples: {counts}")
    T = next(iter(counts.values())) if counts else 1
    if T == 0:
        raise LPInputError("the batch is empty (0 samples)")
    check_finite("A", A, per_sample=A.ndim == 3, error=LPInputError)
    check_finite("b", b, per_sample=b.ndim == 2, error=LPInputError)
    if C is not None:
        check_finite("C", C, per_sample=True, error=LPInputError)
    if check_rank:
        ranks = np.linalg.matrix_rank(A if A.ndim == 3 else A[None])
        deficient = np.flatnonzero(np.atleast_1d(ranks) < m)
        if deficient.size:
            where = f"sample {deficient[0]}" if A.ndim == 3 else "the shared A"
            raise LPInputError(
                f"A of {where} has rank {np.atleast_1d(ranks)[deficient[0]]} < m = {m}; "
                "remove redundant equality rows"
            )
    return LPBatch(A=A, b=b, C=C, n_samples=T)
