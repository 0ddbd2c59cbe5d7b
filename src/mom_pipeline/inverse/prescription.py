"""Prescribe decisions for new contexts with a fitted cost model, in the user's variables."""

from __future__ import annotations

import pandas as pd

from .schema import InverseProblem


def prescribe(model, problem: InverseProblem) -> pd.DataFrame:
    """Decisions (id, x_0..x_{n-1}) for the observations of `problem` (decisions not needed).

    Solves the standard-form LPs with the costs `model.predict_cost(problem.Z)` (a fitted
    `mom_pipeline.methods.base.CostModel` trained in the same standard form) and maps the
    solutions back to the original variables.
    """
    solution = model.decide(problem.Z, problem.lp)
    return problem.decisions_table(problem.std_map.to_original(solution.x))
