"""The hinge QP over a path of regularization constants, one exact solve per constant.

    min_w  (lam/2) ||w||^2 + weight * sum_i max(0, 1 - h_i'w)      for every lam in `lams`

The rows (and so every product and Gram block of them) do not depend on lam: a tuning grid
over lam solves the same rows many times. The path solves the constants from the largest
(where most rows are violated and the optimum is close to the closed form) to the smallest,
and starts each from the previous optimum's margin rows and violated rows: the primal-dual
active-set method (`hinge_working_set.active_set_from_guess`) then usually needs a few
small linear systems instead of a warm start and a working-set loop. When it gives up (its
margin rows are linearly dependent, or its guesses cycle) that constant is solved by
`solve_working_set` started from the previous optimum (its working set: the rows near the
previous margin; measured 3-6x faster than a cold start at lam <= 1e-5 on a kernel MOM of
375 samples, which is where a lam grid spends its time); `policy.path_warm_start` says when
either warm start is used (from `policy.KERNEL_MIN_VARS` unknowns on: kernel features; linear MOM is
solved cold).
Given the margins of a related problem's optimum on the same rows at a constant (a
neighbouring kernel cell), the working set starts from those instead, at any size: below the
kernel size too (polynomial degree 1: 50-80 unknowns), where paths without them are solved cold;
margins without a margin row (a closed-form optimum) are not used.
Without such margins, constants further apart than `policy.PATH_MAX_RATIO` get intermediate
constants between them, solved only as warm starts for the next.
Each result is exact either way: the active-set method stops only when no row contradicts
the optimality conditions (up to `tol` on the margins).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .box_active_set import GuessRecord
from .hinge_rows import HingeRowOperator
from .hinge_working_set import polish_uncertified, solve_working_set
from .margin_active_set import CHURN_AFTER_STEPS, MarginSystems, active_set_from_guess
from .margin_polish import POLISH_BELOW_LAM, POLISH_WARM_START_BELOW
from . import policy  # its thresholds read at call time
from .result import SolverResult

#: The active-set method from the previous constant's sets gives up when, after a few steps,
#: more than this fraction of the rows still change sets per step: its guesses then oscillate
#: for all of its 25 steps (knapsack RBF kernel MOM: about 1000 of 3750 rows per step, 0.5-1 s
#: per constant), while where it works the changes fall off (shortest-path RBF: 8-14 steps).
PATH_GUESS_CHURN = 0.1
#: Rows of the previous optimum within this of the margin are guessed margin rows.
MARGIN_GUESS = 1e-6
#: On a path started from a neighbouring cell's margins the active-set guess checks its churn
#: from this step on (elsewhere from `margin_active_set.CHURN_AFTER_STEPS`, 5): a failing guess
#: is dropped two steps earlier, since the working set from those margins is a good second
#: route there. With the closed-form rule below, figure 4's RBF tunings 3-5 % faster (figure 7's
#: smaller shortest-path ones about as much slower); on refits, which have no such margins, the
#: earlier check had cost more than it saved (docs/decisions/010-regularization-paths.md).
NEIGHBOUR_CHURN_AFTER_STEPS = 3


def solve_hinge_path(rows: HingeRowOperator, lams, weight: float, tol: float, band: float = 1e-2,
                     linear_below: float = 1e-2, max_rounds: int = 100,
                     start_margins: list | None = None) -> list[SolverResult]:
    """A `SolverResult` for every lam of `lams` (in their given order), each the exact optimum.

    Args as `solve_working_set` (no ball constraint: the path is for the unconstrained QP);
    start_margins: None or, for each lam, None or the margins (n_rows,) of a related problem's
    optimum on the same rows at that lam (a neighbouring kernel cell), from which the working
    set starts instead of the previous lam's optimum (or of a cold start below the kernel size:
    the polynomial cells of degree 1 then took a fifth of the time, 0.05-0.1 s instead of 0.3-0.5 s
    over nine lam values on the figures' data).
    Each result's path: "active_set" (the previous constant's active sets were right after a few
    steps), "warm_working_set" (working set from the previous optimum) or "cold".
    """
    lams = np.asarray(lams, dtype=float)
    results: list = [None] * lams.size
    previous = None
    guesses = GuessRecord()  # whether the working set's active-set guesses pay on this path
    margin_systems = MarginSystems(rows)  # one Gram factorization reused from constant to constant
    # Without a related problem's margins the path also solves intermediate constants (warm
    # starts only): smaller steps change the working sets less (RBF kernel grids about 1.5x faster).
    finer = start_margins is None and policy.path_warm_start(rows.n_vars, rows.n_rows)
    churn_after = CHURN_AFTER_STEPS if start_margins is None else NEIGHBOUR_CHURN_AFTER_STEPS
    for i, lam in path_constants(lams, policy.PATH_MAX_RATIO if finer else None):
        # The previous optimum's margins, once: for the active-set guess and the working set's start.
        u = rows.margins(previous) if previous is not None and policy.path_warm_start(rows.n_vars, rows.n_rows) else None
        if u is not None:
            margin = np.abs(u - 1.0) <= MARGIN_GUESS
            multipliers: dict = {}
            w, steps = active_set_from_guess(rows, lam, weight, margin, (u < 1.0) & ~margin, tol,
                                             churn_limit=PATH_GUESS_CHURN, margin_systems=margin_systems,
                                             multipliers=multipliers, churn_after=churn_after)
            if w is not None:
                w = polish_uncertified(rows, lam, weight, w, multipliers.get("alpha"), _polish_below(i),
                                       margin_systems if policy.adaptive_working_set(rows.n_vars) else None)
                if i is not None:
                    results[i] = SolverResult(w, iterations=1, path="active_set", certificate={"margin_tol": float(tol)},
                                              extra=dict(active_set_steps=steps, working_set=0, restricted_solves=0,
                                                         newton_steps=0, rows=int(rows.n_rows)))
                previous = w
                continue
        # The working set from the previous optimum's rows near the margin: much smaller than a
        # cold start's at small lam (where most time goes). From a closed-form optimum (no
        # margin rows) the smoothed Newton start is the better guess.
        warm = u is not None and bool(np.any(np.abs(u - 1.0) <= MARGIN_GUESS))
        start = None if start_margins is None else start_margins[i]
        if start is not None and not np.any(np.abs(start - 1.0) <= MARGIN_GUESS):
            # The same holds for a neighbouring cell's margins: from its closed-form optimum
            # (every row violated) the working set started with every row in the wide band below
            # the margin, 1,900-2,400 of 3,750 rows (figure 4's RBF cells at gamma 1-2, large lam:
            # 0.9-1.8 s each); without that start the path's own (or a cold) start is smaller.
            start = None
        result = solve_working_set(rows, lam, weight, None, tol, previous if warm else None, band, linear_below,
                                   max_rounds, guesses, start, polish_below=_polish_below(i))
        if i is not None:
            results[i] = replace(result, path="warm_working_set" if warm else "cold")
        previous = result.solution
    return results


def _polish_below(index: int | None) -> float:
    """The polish threshold of a path's constant: a grid value's (index into lams) or a warm start's."""
    return POLISH_BELOW_LAM if index is not None else POLISH_WARM_START_BELOW


def path_constants(lams: np.ndarray, max_ratio: float | None) -> list[tuple[int | None, float]]:
    """The constants in the order the path solves them, largest first, as (index into lams, lam),
    with intermediate constants (index None) spaced geometrically wherever two neighbours differ
    by more than max_ratio (None: no intermediate constants; otherwise it must be above 1)."""
    if max_ratio is not None and not max_ratio > 1.0:
        raise ValueError(f"the ratio between a path's constants must be above 1; got {max_ratio}")
    path: list = []
    for i in np.argsort(-lams, kind="stable"):
        lam = float(lams[i])
        if path and max_ratio is not None and path[-1][1] > lam > 0:
            steps = int(np.ceil(np.log(path[-1][1] / lam) / np.log(max_ratio) - 1e-9))
            path += [(None, float(v)) for v in np.geomspace(path[-1][1], lam, steps + 1)[1:-1]]
        path.append((int(i), lam))
    return path
