"""A family of standard-form LPs that knows whether an exact fast oracle solves it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .bases import basis_from_solution
from .batch import ConstraintShape, as_lp_batch
from .errors import LPInputError
from .highs import LPSolution, solve_lp_batch
from .multi_knapsack import MultiKnapsack
from .oracles import FractionalKnapsack, GridShortestPath

SOLVE_METHODS = ("auto", "oracle", "highs")


@dataclass(frozen=True, eq=False)
class StandardFormLP(ConstraintShape):
    """Constraints A x = b, x >= 0 shared by (A: (m, n), b: (m,)) or per sample
    (A: (T, m, n), b: (T, m)), optionally with a known structure that has an oracle."""

    A: np.ndarray
    b: np.ndarray
    structure: GridShortestPath | FractionalKnapsack | MultiKnapsack | None = field(default=None)

    def __post_init__(self):
        batch = as_lp_batch(self.A, self.b, check_rank=True)
        object.__setattr__(self, "A", batch.A)
        object.__setattr__(self, "b", batch.b)

    @classmethod
    def from_structure(cls, structure: GridShortestPath | FractionalKnapsack | MultiKnapsack) -> "StandardFormLP":
        A, b = structure.constraints()
        return cls(A=A, b=b, structure=structure)

    def solve(self, C, method: str = "auto", need_basis: bool = True) -> LPSolution:
        """Solve min c_t'x for every row of C (T, n): the oracle when one exists, else HiGHS.

        need_basis=False lets an oracle skip the basis (`basis` may then be None); methods
        that only need decisions (SGD steps, evaluation) use it.
        """
        if method not in SOLVE_METHODS:
            raise LPInputError(f"method must be one of {SOLVE_METHODS}; got {method!r}")
        if method == "oracle" and self.structure is None:
            raise LPInputError("no oracle for a general LP; use method='highs' or 'auto'")
        if self.structure is not None and method in ("auto", "oracle"):
            return self.structure.solve(C, need_basis=need_basis)
        return solve_lp_batch(self.A, self.b, C)

    def basis_from_solution(self, X) -> np.ndarray:
        """Bases from observed optimal solutions alone (see `lp.bases.basis_from_solution`)."""
        return basis_from_solution(self.A, self.b, X)

    def subset(self, index) -> "StandardFormLP":
        """The LPs of the samples `index` (the same object when the constraints are shared)."""
        if self.A.ndim == 2 and self.b.ndim == 1:
            return self
        A = self.A if self.A.ndim == 2 else self.A[index]
        b = self.b if self.b.ndim == 1 else self.b[index]
        return StandardFormLP(A=A, b=b, structure=self.structure)
