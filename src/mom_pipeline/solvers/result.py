"""The one result type every solver of `solvers/` returns (as scipy's `OptimizeResult` or
cvxpy's `Solution`): what was found, how, and the evidence that it is the optimum.

    result = solve_working_set(rows, lam, weight, ...)
    w = result.solution                # the optimum (an array, or a tuple of arrays)
    result.iterations, result.path     # the work done and the route taken
    result.certificate["kkt_residual"] # why it is optimal, in the solver's own measure
    result.extra["working_set"]        # the solver's own diagnostics

Statuses: "optimal" (the solver's stopping test held), "optimal_inaccurate" (a looser test
the solver documents held: Clarabel's "AlmostSolved", an interior-point iterate converged up to
a round-off floor), or "optimal_at_breakdown" (its system became singular at the very end,
with the certificate still within the looser tolerance the solver documents). A solver that
reaches none of these raises an error naming where it stopped; it never returns a result that
is not optimal to its documented tolerance.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any

#: The statuses a result may carry (see the module docstring).
STATUSES = ("optimal", "optimal_inaccurate", "optimal_at_breakdown")


@dataclass
class SolverResult:
    """One solve's outcome.

    Attributes:
        solution: the optimum: an array, or a tuple of arrays when the problem has several
            blocks of unknowns (e.g. (W, U) of the block hinge QP).
        objective: the objective's value at `solution` (nan when the solver does not compute it).
        iterations: the solver's own count of its main loop (interior-point iterations,
            working-set rounds, active-set steps).
        status: one of `STATUSES`.
        path: the route the solver took (e.g. "active_set", "working_set", "warm_working_set",
            "cold", "block_ipm"), for diagnostics and the policy's benchmarks.
        certificate: the optimality evidence by name, in the solver's own units, e.g.
            "complementarity" and "dual_residual" (interior point), "kkt_residual" (the largest
            broken assumption on a margin), "duality_gap".
        extra: solver-specific diagnostics (working-set sizes, Newton steps, multipliers).
    """

    solution: Any
    objective: float = float("nan")
    iterations: int = 0
    status: str = "optimal"
    path: str = ""
    certificate: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"solver status must be one of {STATUSES}; got {self.status!r}")

    @property
    def success(self) -> bool:
        """True for every returned result (a solver that fails raises): kept for scipy's readers."""
        return self.status in STATUSES

    def info(self) -> dict[str, Any]:
        """A flat dict of the scalar diagnostics (iterations, path, status, the certificate's
        entries and the scalar extras): what an estimator keeps as its `solver_info_`."""
        flat: dict[str, Any] = {"iterations": int(self.iterations), "path": self.path, "status": self.status}
        if self.objective == self.objective:  # not nan
            flat["objective"] = float(self.objective)
        flat.update(self.certificate)
        flat.update({key: value for key, value in self.extra.items() if _is_scalar(value)})
        return flat


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, numbers.Number))
