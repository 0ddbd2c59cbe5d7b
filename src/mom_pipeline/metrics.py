"""Decision-quality metrics of the paper, per test sample and summarized (numpy/pandas only).

Every LP here is a MINIMIZATION  min c'x  s.t. A x = b, x >= 0; for the fractional knapsack
c = -utility on the items and 0 on the slacks. So for every problem the regret
c'(x_hat - x*) is >= 0 (up to rounding) for any feasible decision x_hat when x* is optimal,
and a worse decision has a larger regret.

Relative losses (paper, appendix "performance measures"):

* shortest path:  Rel-Loss_SP = c'(x_hat - x*) / c'x*  (regret over the optimal path length);
* fractional knapsack: the paper writes Rel-Loss_FK = c'(x* - x_hat) / ||c||_2 with c the
  UTILITY of its maximization reading (the released code computes it on utilities; docs/paper_notes.md);
  with our minimization costs c = -utility that is
  u'(x* - x_hat) / ||u||_2 = c'(x_hat - x*) / ||c||_2 = regret / ||c||_2 >= 0
  (||c||_2 = ||u||_2 because the slacks cost 0). Taken literally with the minimization
  costs, the paper's formula would be <= 0 for every decision; we report the >= 0 sign.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .checks import finite_samples

PROBLEMS = ("shortest_path", "knapsack", "multi_knapsack")

#: Relative tolerance of the exactness flags (see `per_sample_metrics`).
EXACT_RTOL = 1e-9


def _as_batch(name: str, value, shape: tuple[int, int] | None = None) -> np.ndarray:
    """A finite (T, n) float array (of `shape` when given); errors name the first bad sample."""
    rows, columns = shape if shape is not None else (None, None)
    return finite_samples(name, value, n_samples=rows, n_columns=columns, shape_hint=" like C" if shape else "")


def _rowdot(U: np.ndarray, V: np.ndarray) -> np.ndarray:
    return np.einsum("tj,tj->t", U, V)


def per_sample_metrics(C, X_hat, X_star, problem: str, C_hat=None) -> pd.DataFrame:
    """One row per test sample with the decision-quality metrics (`sample_metric_columns`),
    indexed by ``sample`` 0..T-1."""
    frame = pd.DataFrame(sample_metric_columns(C, X_hat, X_star, problem, C_hat=C_hat))
    frame.index.name = "sample"
    return frame


def sample_metric_columns(C, X_hat, X_star, problem: str, C_hat=None) -> dict[str, np.ndarray]:
    """The decision-quality metrics of each test sample, as columns (name -> (T,) array).

    Args:
        C: (T, n) true costs; X_hat: (T, n) decisions (LP solutions for the predicted costs);
        X_star: (T, n) optimal solutions for C; problem: one of PROBLEMS (the knapsacks share their relative loss);
        C_hat: optional (T, n) predicted costs.

    Returns:
        columns, in this order:

        * ``regret`` = c'(x_hat - x*) (>= 0 up to rounding when x* is optimal);
        * ``optimal_value`` = c'x*;  ``decision_value`` = c'x_hat;
        * ``relative_loss``: shortest path regret / |c'x*| (the paper's ratio; the absolute
          value only matters for a negative optimal length, possible only when additive noise
          makes edge costs negative, and keeps "worse decision => larger loss"); NaN when
          c'x* = 0, where the ratio is undefined. Knapsack regret / ||c||_2 (module docstring
          for the sign); NaN when c = 0.
        * ``relative_loss_released``: what the authors' released code computed. Shortest path:
          ``c@(x_hat - x_star) / c@x_star`` evaluated left to right by numpy, i.e.
          (regret / c) @ x* = regret * sum_j x*_j / c_j over the edges of the optimal path
          (we sum over x*_j != 0 only, so an off-path zero cost does not give 0/0; otherwise
          identical). On an 8-edge path AM-HM gives sum_j 1/c_j >= 64 / c'x*, so it is at
          least 64 times ``relative_loss`` for positive costs. Knapsack: the released metric
          is the paper's, so this column equals ``relative_loss``.
        * ``exact_solution``: max_j |x_hat_j - x*_j| <= 1e-9 * max(1, max_j |x*_j|)
          (the same vertex);
        * ``exact_value``: |regret| <= 1e-9 * (|c|'|x*| + |c|'|x_hat|) (an optimal
          decision, counting tied optima; the scale bounds the rounding error of the two
          dot products), also true when both sides are exactly 0;
        * ``exact``: = ``exact_value`` (the decision is optimal for the true costs);
        * with C_hat: ``prediction_loss`` = ||c_hat - c||_2^2 and ``suboptimality_loss`` =
          c_hat'x* - c_hat'x_hat (>= 0 when x_hat minimizes c_hat'x).

    Raises:
        ValueError: unknown problem, shapes that disagree, or a non-finite entry (naming
        the sample).
    """
    if problem not in PROBLEMS:
        raise ValueError(f"problem must be one of {PROBLEMS}; got {problem!r}")
    C = _as_batch("C", C)
    X_hat = _as_batch("X_hat", X_hat, C.shape)
    X_star = _as_batch("X_star", X_star, C.shape)

    decision_value = _rowdot(C, X_hat)
    optimal_value = _rowdot(C, X_star)
    regret = decision_value - optimal_value
    with np.errstate(divide="ignore", invalid="ignore"):
        if problem == "shortest_path":
            relative = np.where(optimal_value != 0, regret / np.abs(optimal_value), np.nan)
            on_path = X_star != 0
            inverse_cost_on_path = np.divide(X_star, C, out=np.zeros_like(C), where=on_path)
            # A zero cost on the path makes the released expression infinite (or NaN with 0 regret).
            inverse_cost_on_path[on_path & (C == 0)] = np.inf
            released = regret * inverse_cost_on_path.sum(axis=1)
        else:
            norm = np.linalg.norm(C, axis=1)
            relative = np.where(norm > 0, regret / norm, np.nan)
            released = relative.copy()

    abs_C = np.abs(C)
    value_scale = _rowdot(abs_C, np.abs(X_star)) + _rowdot(abs_C, np.abs(X_hat))
    exact_value = np.abs(regret) <= EXACT_RTOL * value_scale
    solution_scale = np.maximum(1.0, np.abs(X_star).max(axis=1))
    exact_solution = np.abs(X_hat - X_star).max(axis=1) <= EXACT_RTOL * solution_scale

    columns = dict(regret=regret, optimal_value=optimal_value, decision_value=decision_value,
                   relative_loss=relative, relative_loss_released=released,
                   exact_solution=exact_solution, exact_value=exact_value, exact=exact_value)
    if C_hat is not None:
        C_hat = _as_batch("C_hat", C_hat, C.shape)
        columns["prediction_loss"] = ((C_hat - C) ** 2).sum(axis=1)
        columns["suboptimality_loss"] = _rowdot(C_hat, X_star) - _rowdot(C_hat, X_hat)
    return columns


def mean_skipping_nan(values) -> float:
    """The mean of the non-NaN values (NaN when there are none), computed as pandas'
    ``Series.mean`` computes it (NaN set to 0, one sum, divided by the count): the same bits,
    without building a Series (validation scores of a tuning grid, one per cell)."""
    values = np.asarray(values, dtype=float)
    missing = np.isnan(values)
    count = values.size - int(missing.sum())
    return float(np.where(missing, 0.0, values).sum() / count) if count else float("nan")


def normalized_regret(regret, optimal_value) -> float:
    """sum_t regret_t / sum_t |optimal_value_t| (NaN when every optimal value is 0)."""
    regret = np.asarray(regret, dtype=float)
    denominator = np.abs(np.asarray(optimal_value, dtype=float)).sum()
    if regret.shape != np.shape(optimal_value):
        raise ValueError(f"regret {regret.shape} and optimal_value {np.shape(optimal_value)} differ in shape")
    return float(regret.sum() / denominator) if denominator > 0 else float("nan")


def normalized_regret_by(frame: pd.DataFrame, keys: Sequence[str]) -> pd.Series:
    """`normalized_regret` per group of `keys` of a table of per-sample metrics (columns
    ``regret`` and ``optimal_value``): sum of regrets / sum of |optimal values|."""
    sums = frame.groupby(list(keys), sort=False).agg(
        sum_regret=("regret", "sum"), sum_abs_optimal=("optimal_value", lambda v: np.abs(v).sum()))
    return (sums["sum_regret"] / sums["sum_abs_optimal"]).rename("normalized_regret")
