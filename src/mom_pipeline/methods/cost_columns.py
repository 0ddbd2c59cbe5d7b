"""Which cost columns a cost model learns: every column, or all but an inequality form's slacks.

Kept apart from `baselines` (whose kernels import MOM's solvers) so that the methods that use it,
SPO+ and the perturbation family, depend on no solver they never run (their code identity,
`experiments.code_identity`, follows the modules they import).
"""

from __future__ import annotations

import numpy as np

from ..lp import StandardFormLP


SPO_COST_COLUMNS = ("non_slack", "all")


def slack_columns(A) -> np.ndarray | None:
    """(m,) column indices S with A[:, S] diagonal (one column with a single nonzero entry per row:
    the slacks of an inequality form), the same in every sample; None when some row has none.

    Any cost c decides as c - A'y with y = A_S^{-T} c_S, whose entries on S are 0 (for every
    feasible x the two objectives differ by the constant y'b): costs on the other columns alone
    lose no decision."""
    A = np.asarray(A, dtype=float)
    stack = A[None] if A.ndim == 2 else A
    nonzero = stack != 0
    single = (nonzero.sum(axis=1) == 1).all(axis=0)  # (n,) one nonzero entry, in every sample
    row_of = nonzero[0].argmax(axis=0)  # that entry's row
    same_row = (nonzero.argmax(axis=1) == row_of).all(axis=0)
    chosen = np.full(stack.shape[1], -1)
    for j in np.flatnonzero(single & same_row)[::-1]:  # the first such column of each row
        chosen[row_of[j]] = j
    return None if (chosen < 0).any() else chosen


def learned_cost_columns(lp: StandardFormLP, cost_columns: str) -> np.ndarray:
    """(n,) bool: the columns whose costs SPO+ learns (`SPOPlus.cost_columns`)."""
    learned = np.ones(lp.n, dtype=bool)
    slacks = slack_columns(lp.A) if cost_columns == "non_slack" else None
    if slacks is not None:
        learned[slacks] = False
    return learned
