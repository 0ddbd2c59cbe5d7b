"""Standard-form LP layer: HiGHS solves with bases, exact oracles, bases from x*, reduced costs.

Nothing here imports Kedro; notebooks and user scripts import it directly.
"""

from .bases import (
    BASIS_MODES,
    basis_from_solution,
    check_feasible,
    nonbasic_indices,
    reduced_cost_operator,
    reduced_costs,
)
from .batch import LPBatch, as_lp_batch
from .errors import BasisError, LPInputError, LPSolveError, SampleError
from .highs import LPSolution, basis_matrices, solve_lp_batch
from .multi_knapsack import MultiKnapsack
from .oracles import FractionalKnapsack, GridShortestPath
from .problem import StandardFormLP

__all__ = [
    "BASIS_MODES",
    "BasisError",
    "FractionalKnapsack",
    "GridShortestPath",
    "LPBatch",
    "LPInputError",
    "LPSolution",
    "LPSolveError",
    "MultiKnapsack",
    "SampleError",
    "StandardFormLP",
    "as_lp_batch",
    "basis_from_solution",
    "basis_matrices",
    "check_feasible",
    "nonbasic_indices",
    "reduced_cost_operator",
    "reduced_costs",
    "solve_lp_batch",
]
