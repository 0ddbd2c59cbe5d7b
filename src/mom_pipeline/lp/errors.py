"""Errors raised by the LP layer: every message names the sample and the problem."""

from __future__ import annotations


class LPInputError(ValueError):
    """An LP batch has the wrong shape, non-finite entries or a rank-deficient A."""


class SampleError(ValueError):
    """A problem with one sample of a batch; ``sample`` is its index (0-based)."""

    def __init__(self, sample: int, message: str):
        self.sample = int(sample)
        self.reason = message
        super().__init__(f"sample {sample}: {message}")


class LPSolveError(SampleError):
    """HiGHS did not return an optimal solution (infeasible, unbounded, ...)."""

    def __init__(self, sample: int, status: str):
        self.status = status
        super().__init__(sample, f"LP not solved to optimality (HiGHS status: {status})")


class BasisError(SampleError):
    """A basis could not be formed (singular A_B, x* not a vertex, x* infeasible)."""
