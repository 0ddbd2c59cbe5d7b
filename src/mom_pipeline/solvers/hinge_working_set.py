"""The exact hinge-QP solver behind MOM: warm start, active-set finish, working set.

    min_w  (lam/2) ||w||^2 + weight * sum_i max(0, 1 - h_i'w)      (optionally ||w|| <= radius)

an L2-regularized hinge loss without intercept (a linear SVM whose labels are all +1). The
rows h_i are never formed as one matrix: the solver sees them through a row operator
(`HingeRowOperator`), so the caller chooses how products with them are computed (MOM's rows
are Kronecker products of reduced-cost rows and features).

1. Warm start (`hinge_newton.smoothed_hinge_start`), or the closed form with every row
   violated when it is the optimum (large lam).
2. Active-set finish (`margin_active_set`): the optimality conditions with the smoothed rows guessed as the margin
   rows are a small linear system; rows whose multiplier or margin contradicts the guess
   move, and when none does the point is optimal. It gives up when the margin rows are
   linearly dependent (frequent on degenerate LPs) and step 3 runs.
3. Working set: rows clearly violated at the start enter a QP as a constant gradient, rows
   clearly satisfied are dropped, the rest are hinge constraints; the restricted QP is solved
   (by the path `policy.restricted_qp_method` picks); rows that break their assumption join.
   The restricted problem lower-bounds the full one, so when no row breaks its assumption (up
   to `tol` on the margins) the restricted optimum is the optimum. On kernel-sized problems
   (`policy.adaptive_working_set`) rows the restricted optimum puts far from the margin leave
   the working set once, so that the restricted QPs stay about the size of the margin set,
   and each restricted QP is first tried from the previous round's active sets by the
   active-set method of `box_active_set` (a few factorizations of the free block instead of
   the 15-20 of the interior-point method), which also finishes a stalled interior-point solve.
With a ball constraint only step 3 runs.
"""

from __future__ import annotations

import clarabel
import numpy as np
import scipy.sparse as sp

from .clarabel_qp import ball_block, solve_clarabel
from .hinge_rows import HingeRowOperator
from .box_active_set import GuessRecord, box_qp_active_set, solve_on_guessed_sets
from .hinge_newton import smoothed_hinge_start
from .interior_point import BoxQPStalled, HingeIPMStalled, box_gap_of_gradient, box_qp, hinge_qp_ipm
from .margin_active_set import MarginSystems, active_set_finish, primal_point
from .margin_polish import (POLISH_BELOW_LAM, margin_multipliers, polish_margin_rows, restricted_gap,
                            restricted_objective)
from .result import SolverResult
# The policy's thresholds are read from the module at call time (`policy.NAME`), never copied
# here: changing the policy (a benchmark, a test) changes what every later solve does.
from . import policy

#: Clarabel's tolerances on a restricted QP. Its defaults (1e-8) hold in its equilibrated problem;
#: at tiny scaled lam (7e-15: RBF kernel MOM, gamma 3, lam 1e-6) a restricted optimum "Solved"
#: with them left the MOM objective 1.3e-5 above the optimum, with 1e-10 within 2e-8 of cvxpy.
RESTRICTED_CLARABEL_TOL = 1e-10
#: Bands of `polish_margin_rows` for a stalled box dual's point, whose margins can be off by 1e-3.
STALLED_POLISH_BANDS = (1e-3, 1e-4, 1e-6)
#: Margin bands of the multipliers that certify a stalled primal iterate (`_certified_stall`).
CERTIFY_BANDS = (1e-9, 1e-7)


def restricted_qp(rows: HingeRowOperator, lam: float, weight: float, working: np.ndarray, linear: np.ndarray,
                   radius: float | None) -> np.ndarray:
    """argmin_w (lam/2)||w||^2 - weight * sum_{linear} h'w + weight * sum_{working} max(0, 1 - h'w)
    (within the ball when radius is set): the MOM problem with the rows in `linear` assumed
    violated and the rows outside both sets assumed satisfied."""
    return restricted_qp_warm(rows, lam, weight, working, linear, radius)[0]


class ProvisionalPoint(RuntimeError):
    """The primal interior-point method stalled on a restricted QP and no certificate accepts its
    last iterate `w`. Raised by `restricted_qp_warm` only when the caller allows it: a working-set
    round whose point breaks some row's assumption is not the last, so an inexact restricted
    optimum only steers the next working set there, and only the last round needs the exact one."""

    def __init__(self, w: np.ndarray):
        super().__init__("uncertified restricted optimum")
        self.w = w


def restricted_qp_warm(rows: HingeRowOperator, lam: float, weight: float, working: np.ndarray, linear: np.ndarray,
                       radius: float | None, status: np.ndarray | None = None,
                       guesses: GuessRecord | None = None,
                       provisional: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """`restricted_qp` and the multipliers of the working rows (None when the path taken does not
    give them), started from a guess of their active sets when `status` is given ((n_rows,):
    -1 satisfied, +1 violated, 0 on the margin; `box_active_set`), which is tried first unless
    `guesses` (the record of earlier guesses on the same path) says it does not pay.

    provisional: raise `ProvisionalPoint` with a stalled interior-point iterate that no certificate
    accepts, instead of solving the QP again by Clarabel (at scaled lam 5.7e-15, restricted QPs
    with hundreds of rows assumed violated have optima of norm 1e6 or more: the interior-point
    method stalls on them, and Clarabel took 1.5-2.7 s each without reaching them either)."""
    p = rows.n_vars
    gradient = weight * rows.weighted_sum(linear.astype(float))
    n_linear = int(linear.sum())
    if not working.any():
        # Closed form: the unconstrained minimizer, projected onto the ball.
        w = gradient / lam
        norm = np.linalg.norm(w)
        if radius is not None and norm > radius:
            w *= radius / norm
        return w, np.zeros(0)
    index = np.flatnonzero(working)
    k = index.size
    method = policy.restricted_qp_method(p, k, ball=radius is not None)  # see policy.py for why
    gram = shift = None
    if status is not None and radius is None and (guesses is None or guesses.worth_trying()):
        # The dual box QP from the guessed active sets: a few factorizations of the free block
        # when the guess is close (later rounds), else it gives up after a few and the method
        # the policy picks runs.
        gram, shift = rows.gram(index), rows.margins_of(index, gradient)
        found = _box_dual_from_guess(rows, index, gradient, lam, weight, gram / lam, shift / lam - 1.0, status[index],
                                     n_linear)
        if guesses is not None:
            guesses.record(found is not None)
        if found is not None:
            return found
    if method == "interior_point":
        try:
            return hinge_qp_ipm(rows.dense_rows(index), gradient, lam, weight).solution, None
        except HingeIPMStalled as stalled:
            # At tiny scaled lam the iterations can reach the optimum without their certificate
            # (its stationarity term is divided by lam); Clarabel, the fallback, then "solved" a
            # restricted QP of 361 rows at scaled lam 1.2e-14 3.3e-3 above its optimum.
            found = _certified_stall(rows, index, gradient, lam, weight, stalled.w, n_linear)
            if found is not None:
                return found
            if provisional and np.isfinite(stalled.w).all():
                raise ProvisionalPoint(stalled.w) from None
    if method == "box_dual":
        found = _box_dual(rows, index, gradient, lam, weight, gram, shift, n_linear)
        if found is not None:
            return found
        # Clarabel is the fallback of both custom paths
    try:
        return _restricted_clarabel(rows, index, gradient, lam, weight, radius), None
    except RuntimeError:
        # Clarabel gives up on some tiny, badly scaled restricted QPs (InsufficientProgress: 14
        # rows, 105 unknowns, lam 1e-13 in a polynomial kernel cell of degree 1), where the
        # certified box dual (every multiplier at a bound: a zero duality gap) has the answer.
        found = None if method == "box_dual" or radius is not None else _box_dual(rows, index, gradient, lam,
                                                                                   weight, gram, shift, n_linear)
        if found is None:
            raise
        return found


def _dual_offset(gradient: np.ndarray, lam: float, weight: float, n_linear: int) -> float:
    """The constant that makes -(f + offset) of the box dual the MOM objective's dual value: the
    restricted QP leaves out the n_linear violated rows' constant (weight each). The scale of the
    box dual's relative stops."""
    return gradient @ gradient / (2.0 * lam) - weight * n_linear


def _box_dual(rows: HingeRowOperator, index: np.ndarray, gradient: np.ndarray, lam: float, weight: float,
              gram: np.ndarray | None, shift: np.ndarray | None,
              n_linear: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(w, alpha) of the restricted QP through its dual, a box QP over the working rows with their
    k x k Gram matrix (certified by its duality gap, policy.BOX_DUAL_GAP, or policy.BOX_DUAL_REL_GAP
    of the MOM objective -(f + `_dual_offset`)), or None when it stalls. n_linear: the rows folded into gradient."""
    if gram is None:
        gram, shift = rows.gram(index), rows.margins_of(index, gradient)
    Q, c = gram / lam, shift / lam - 1.0
    offset = _dual_offset(gradient, lam, weight, n_linear)

    def crossover(status: np.ndarray) -> np.ndarray | None:
        # The box QP over the rows the iterate guesses free, accepted by the interior-point
        # method's own stop (its gap below policy.BOX_DUAL_GAP or policy.BOX_DUAL_REL_GAP of the objective).
        found = solve_on_guessed_sets(Q, c, weight, status)
        if found is None:
            return None
        a, g = found
        scale = 0.5 * a @ (g + c) + offset
        return a if _gap_accepted(box_gap_of_gradient(g, weight, a), scale) else None

    try:
        alpha = box_qp(Q, c, weight, gap_tol=policy.BOX_DUAL_GAP, gap_rel=policy.BOX_DUAL_REL_GAP, offset=offset,
                       crossover=crossover if c.size >= policy.BOX_CROSSOVER_MIN_ROWS else None).solution
        return primal_point(rows, index, gradient, lam, alpha), alpha
    except BoxQPStalled as stalled:
        # Round-off stopped the interior-point method near the optimum (a multiplier on
        # its bound: RBF kernel MOM, 5 of 56 box QPs of a cell): the active sets of its last
        # point are a close guess, cheaper to finish than Clarabel (1.4 s each).
        status = _bound_status(stalled.iterate, weight)
        found = _box_dual_from_guess(rows, index, gradient, lam, weight, Q, c, status, n_linear)
        return found if found is not None else _polished_stall(rows, index, gradient, lam, weight, stalled.iterate,
                                                                n_linear)


def _polished_stall(rows: HingeRowOperator, index: np.ndarray, gradient: np.ndarray, lam: float, weight: float,
                    alpha: np.ndarray, n_linear: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(w, alpha) from a stalled box dual's last point when its polished w is certified, else None.

    At tiny scaled lam (wide RBF kernels at lam <= 1e-5: 1e-15 to 1e-13) the box dual stalls on
    restricted QPs of 100-250 rows because its objective cancels; they went to Clarabel on the
    primal (thousands of unknowns, 0.2-3.5 s each). The stalled point's w, with its margin rows
    polished, has a gap (`margin_polish.restricted_gap`) that needs no cancelling difference; it
    is accepted below policy.BOX_DUAL_REL_GAP of the MOM objective, P(w) plus the linear rows' weight."""
    alpha = np.clip(alpha, 0.0, weight)
    w = primal_point(rows, index, gradient, lam, alpha)
    w = polish_margin_rows(rows, lam, weight, w, index, gradient, STALLED_POLISH_BANDS)
    scale = restricted_objective(rows, lam, weight, w, index, gradient) + weight * n_linear
    return (w, alpha) if _gap_accepted(restricted_gap(rows, lam, weight, w, alpha, index, gradient), scale) else None


def _gap_accepted(gap: float, scale: float) -> bool:
    """The box dual's stop applied to a restricted QP's gap: policy.BOX_DUAL_GAP, or
    policy.BOX_DUAL_REL_GAP of the MOM objective `scale`."""
    return bool(np.isfinite(gap) and gap <= max(policy.BOX_DUAL_GAP, policy.BOX_DUAL_REL_GAP * abs(scale)))


def _certified_stall(rows: HingeRowOperator, index: np.ndarray, gradient: np.ndarray, lam: float, weight: float,
                     w: np.ndarray, n_linear: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(w, alpha) from a stalled primal interior-point iterate w, its margin rows polished, when
    multipliers fitted to it (`margin_polish.margin_multipliers`) certify it below
    policy.BOX_DUAL_REL_GAP of the MOM objective; else None."""
    if not np.isfinite(w).all():
        return None
    w = polish_margin_rows(rows, lam, weight, w, index, gradient, STALLED_POLISH_BANDS)
    scale = restricted_objective(rows, lam, weight, w, index, gradient) + weight * n_linear
    for band in CERTIFY_BANDS:
        alpha = margin_multipliers(rows, lam, weight, w, index, gradient, band)
        if _gap_accepted(restricted_gap(rows, lam, weight, w, alpha, index, gradient), scale):
            return w, np.clip(alpha, 0.0, weight)
    return None


def _box_dual_from_guess(rows: HingeRowOperator, index: np.ndarray, gradient: np.ndarray, lam: float, weight: float,
                         Q: np.ndarray, c: np.ndarray, status: np.ndarray,
                         n_linear: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(w, alpha) of the restricted QP from the box dual min 0.5 a'Qa + c'a, 0 <= a <= weight,
    solved by `box_qp_active_set` from a guess of its active sets (status per working row), or
    None when that gives up."""
    alpha, _ = box_qp_active_set(Q, c, weight, status, policy.BOX_DUAL_GAP, gap_rel=policy.BOX_DUAL_REL_GAP,
                                 offset=_dual_offset(gradient, lam, weight, n_linear), max_free=rows.n_vars)
    return None if alpha is None else (primal_point(rows, index, gradient, lam, alpha), alpha)


def _restricted_clarabel(rows: HingeRowOperator, index: np.ndarray, gradient: np.ndarray, lam: float,
                         weight: float, radius: float | None) -> np.ndarray:
    """The restricted QP's w by Clarabel on its primal (with the ball constraint when set)."""
    p, k = rows.n_vars, index.size
    n_vars = p + k
    H_w = rows.rows(index)
    identity = sp.identity(k, format="csr")
    # h'w + s >= 1  and  s >= 0, written as b - A x >= 0.
    A = sp.vstack([sp.hstack([-H_w, -identity]), sp.hstack([sp.csr_matrix((k, p)), -identity])], format="csr")
    b = np.concatenate([-np.ones(k), np.zeros(k)])
    cones = [clarabel.NonnegativeConeT(2 * k)]
    if radius is not None:
        A_ball, b_ball, cone = ball_block(n_vars, 0, p, radius)
        A, b, cones = sp.vstack([A, A_ball], format="csr"), np.concatenate([b, b_ball]), cones + [cone]
    P = sp.diags(np.concatenate([np.full(p, lam), np.zeros(k)]), format="csc")
    q = np.concatenate([-gradient, np.full(k, weight)])
    return solve_clarabel(P, q, A, b, cones, "restricted MOM QP", tol=RESTRICTED_CLARABEL_TOL).solution[:p]


def solve_working_set(rows: HingeRowOperator, lam: float, weight: float, radius: float | None, tol: float,
                      w0: np.ndarray | None, band: float, linear_below: float,
                      max_rounds: int, guesses: GuessRecord | None = None,
                      start_margins: np.ndarray | None = None,
                      polish_below: float = POLISH_BELOW_LAM) -> SolverResult:
    """argmin_w (lam/2)||w||^2 + weight * sum_i max(0, 1 - h_i'w) (within the ball ||w|| <= radius
    when set) over the rows of `rows`, exactly: warm start, active-set finish, working set.

    Args:
        tol: a row breaks its assumption when its margin is beyond 1 by more than tol.
        w0: (n_vars,) warm start; None: the closed form when it violates every row, else the
            smoothed-hinge Newton start.
        band: rows whose warm-start margin is within band of 1 start in the working set;
            rows below 1 - linear_below are assumed violated, rows above 1 + band satisfied
            (on kernel-sized problems linear_below is at least `policy.KERNEL_LINEAR_BELOW`).
        guesses: on kernel-sized problems without a ball, each round's restricted QP is first
            tried from the active sets of the previous round (of w0 in the first round) by
            `box_active_set`; guesses records how that went on the path so far (None: always try).
        polish_below: below this lam the solution's margin rows are polished
            (`polish_margin_rows_below`).
    Returns:
        a `SolverResult`: solution w (n_vars,); iterations the working-set rounds (1 when the
        active-set finish solved it, path "active_set", else path "working_set"); certificate
        the margin tolerance to which no row breaks its assumption; extra the working-set
        sizes, Newton steps, restricted solves, ...
    """
    newton_steps = 0
    warm = w0 is not None or start_margins is not None
    if w0 is None and start_margins is None:
        w0 = closed_form_start(rows, lam, weight, radius)
        if w0 is None:
            w0, newton_steps = smoothed_hinge_start(rows, lam, weight)
            if radius is not None and np.linalg.norm(w0) > radius:
                w0 *= radius / np.linalg.norm(w0)
                band = max(band, 0.1)  # a cruder start: more rows near the margin
    u_start = rows.margins(np.asarray(w0, dtype=float).ravel()) if start_margins is None else start_margins
    if radius is None and newton_steps:
        multipliers: dict = {}
        w, active_steps = active_set_finish(rows, lam, weight, u_start, tol, multipliers=multipliers)
        if w is not None:
            extra = dict(working_set=0, linear_rows=int((rows.margins(w) < 1.0).sum()), restricted_solves=0,
                         newton_steps=int(newton_steps), active_set_steps=active_steps, rows=int(rows.n_rows))
            w = polish_uncertified(rows, lam, weight, w, multipliers.get("alpha"), polish_below)
            return _working_set_result(w, 1, "active_set", tol, extra)
    # Rows far below the margin at the start are assumed violated (linear). With a weak
    # regularizer that assumption lets the restricted optimum jump far (its linear pull is
    # only held back by lam); a jump shows as many broken rows, and then fewer rows are
    # linearized: the threshold `linear_below` grows and the jump is discarded (not on
    # kernel-sized problems, where that grew working sets to every row, 3745 of 3750: there
    # the broken rows join and the far ones leave instead).
    adaptive = policy.adaptive_working_set(rows.n_vars)  # shrink the working set, no growth after jumps
    if adaptive:
        # Kernel-sized problems start with a wider band below the margin in the working set
        # (`policy.KERNEL_LINEAR_BELOW`): fewer rows assumed violated, a smaller jump of the
        # first restricted optimum, a smaller second round.
        linear_below = max(linear_below, policy.KERNEL_LINEAR_BELOW)
    working = (u_start >= 1.0 - linear_below) & (u_start <= 1.0 + band)
    linear = u_start < 1.0 - linear_below
    solves = 0
    leaves = np.zeros(rows.n_rows, dtype=np.int32)  # how often each row has left the working set
    held_back = 0  # broken rows kept out of a round by the join cap, summed over the rounds
    # The active sets of the previous round's optimum, a guess for the next round's; in the first
    # round, those of a given warm start (the previous lam's optimum on a regularization path).
    status = active_set_guess(u_start, working, None, weight) if adaptive and radius is None and warm else None
    for round_ in range(1, max_rounds + 1):
        try:
            w, alpha = restricted_qp_warm(rows, lam, weight, working, linear, radius, status, guesses, provisional=True)
            u = rows.margins(w)
        except ProvisionalPoint as point:
            w, alpha = point.w, None
            u = rows.margins(w)
            if not _breaks_assumption(u, working, linear, tol).any():
                # It would be the last round: its point must be the exact restricted optimum.
                w, alpha = restricted_qp_warm(rows, lam, weight, working, linear, radius, status, guesses)
                u = rows.margins(w)
        solves += working.any()
        if adaptive and radius is None:
            status = active_set_guess(u, working, alpha, weight)
        broken = _breaks_assumption(u, working, linear, tol)
        if not broken.any():
            break
        if not adaptive and linear.any() and broken.sum() > max(100, working.sum()):
            linear_below *= 4.0
            working |= (u_start >= 1.0 - linear_below) & (u_start <= 1.0 + band)
            linear &= ~working
            continue
        # Working rows the restricted optimum put far from the margin leave the working set
        # (violated ones become linear, satisfied ones are dropped): the next restricted QP is
        # then about the size of the margin set instead of every row ever near it (RBF kernel
        # MOM: 400-900 rows instead of 650-2500). A row leaves with its multiplier at the bound
        # it goes to, so the restricted optimum stays, and the broken rows joining raise it: the
        # rounds end (each row may leave up to policy.WORKING_SET_LEAVES times, then it stays).
        far = (working & (leaves < policy.WORKING_SET_LEAVES) & (np.abs(u - 1.0) > band) if adaptive
               else np.zeros_like(working))
        working &= ~far
        linear |= far & (u < 1.0)
        leaves += far
        if adaptive and round_ <= policy.WORKING_SET_JOIN_ROUNDS:
            # At most as many broken rows join as the working set holds (policy.WORKING_SET_JOIN_MIN at
            # least), the furthest from the margin first: after a jump of the restricted optimum
            # the whole crowd of broken rows made box QPs of thousands of rows, most of which
            # left again in the round after (`policy.WORKING_SET_JOIN_MIN`).
            broken, held = _furthest_broken(broken, u, max(int(working.sum()), policy.WORKING_SET_JOIN_MIN))
            held_back += held
        # Rows near the margin join too: the next restricted optimum is likely to move them.
        joining = broken | (~working & (np.abs(u - 1.0) <= band))
        working |= joining
        linear &= ~joining
    else:
        raise RuntimeError(f"MOM working-set method did not terminate in {max_rounds} rounds")
    extra = dict(working_set=int(working.sum()), linear_rows=int(linear.sum()),
                 restricted_solves=int(solves), newton_steps=int(newton_steps), rows=int(rows.n_rows),
                 dropped_rows=int((leaves > 0).sum()), most_leaves=int(leaves.max(initial=0)), held_back=held_back)
    if radius is None:
        if alpha is not None:  # the multipliers of every row: weight on the linear ones, 0 off the sets
            alpha, working_alpha = np.where(linear, weight, 0.0), alpha
            alpha[working] = working_alpha
        w = polish_uncertified(rows, lam, weight, w, alpha, polish_below)
    return _working_set_result(w, round_, "working_set", tol, extra)


def _working_set_result(w: np.ndarray, rounds: int, path: str, tol: float, extra: dict) -> SolverResult:
    """The result of `solve_working_set`: it stops only when no row breaks its assumption
    beyond tol on its margin, which is its certificate."""
    return SolverResult(w, iterations=int(rounds), path=path, certificate={"margin_tol": float(tol)}, extra=extra)


def certified(rows: HingeRowOperator, lam: float, weight: float, w: np.ndarray, alpha: np.ndarray | None) -> bool:
    """Whether multipliers alpha of every row certify w within policy.BOX_DUAL_REL_GAP of its objective."""
    if alpha is None:
        return False
    gap = restricted_gap(rows, lam, weight, w, alpha, np.arange(rows.n_rows), np.zeros(rows.n_vars))
    return bool(np.isfinite(gap) and gap <= policy.BOX_DUAL_REL_GAP * restricted_objective(rows, lam, weight, w))


def polish_uncertified(rows: HingeRowOperator, lam: float, weight: float, w: np.ndarray, alpha: np.ndarray | None,
                       below: float = POLISH_BELOW_LAM, margin_systems: "MarginSystems | None" = None) -> np.ndarray:
    """`polish_margin_rows_below`, unless the solver's multipliers alpha (of every row, or None)
    already certify w: polishing factors the margin rows' Gram matrix (0.5 s on a narrow RBF
    cell's 2,000 rows), which a certified point does not need; with `margin_systems` (a path's),
    the polish solves from its factorization instead."""
    if lam >= below or certified(rows, lam, weight, w, alpha):
        return w
    if margin_systems is not None:
        return polish_margin_rows(rows, lam, weight, w, solve=margin_systems.solve)
    return polish_margin_rows_below(rows, lam, weight, w, below)


def _furthest_broken(broken: np.ndarray, u: np.ndarray, limit: int) -> tuple[np.ndarray, int]:
    """(the broken rows that join, how many are held back): all of them when at most `limit`,
    else the `limit` with margins u furthest from 1."""
    count = int(broken.sum())
    if count <= limit:
        return broken, 0
    index = np.flatnonzero(broken)
    joining = np.zeros_like(broken)
    joining[index[np.argpartition(-np.abs(u[index] - 1.0), limit - 1)[:limit]]] = True
    return joining, count - limit


def _breaks_assumption(u: np.ndarray, working: np.ndarray, linear: np.ndarray, tol: float) -> np.ndarray:
    """The rows whose margins u contradict their round's assumption (beyond tol): rows assumed
    violated (linear) above the margin, rows assumed satisfied (outside both sets) below it."""
    return (linear & (u > 1.0 + tol)) | (~linear & ~working & (u < 1.0 - tol))


def polish_margin_rows_below(rows: HingeRowOperator, lam: float, weight: float, w: np.ndarray,
                             below: float = POLISH_BELOW_LAM) -> np.ndarray:
    """`margin_polish.polish_margin_rows` over every row when lam < below (POLISH_BELOW_LAM: the
    dual solvers' margins are not good to 1e-9 there), else w."""
    return polish_margin_rows(rows, lam, weight, w) if lam < below else w


def _bound_status(alpha: np.ndarray, weight: float) -> np.ndarray:
    """The `box_active_set` status of box-dual multipliers: -1 at the lower bound, +1 at the upper
    bound weight (each up to 1e-6 of weight: round-off of an interior-point solution), else 0."""
    return np.where(alpha <= 1e-6 * weight, -1, np.where(alpha >= (1.0 - 1e-6) * weight, 1, 0))


def active_set_guess(u: np.ndarray, working: np.ndarray, alpha: np.ndarray | None, weight: float,
                     margin_band: float = 1e-6) -> np.ndarray:
    """The active sets of a restricted optimum (-1 satisfied, +1 violated, 0 on the margin: the
    `box_active_set` status of every row), from its margins u and its multipliers alpha of the
    working rows (None: margins only). Margin rows whose multiplier is at a bound (up to
    round-off of an interior-point solution) are guessed at that bound."""
    status = np.where(u < 1.0 - margin_band, 1, np.where(u > 1.0 + margin_band, -1, 0))
    if alpha is not None:
        index = np.flatnonzero(working)
        on_margin = status[index] == 0
        at_bound = _bound_status(alpha, weight)
        status[index[on_margin]] = at_bound[on_margin]
    return status


def closed_form_start(rows: HingeRowOperator, lam: float, weight: float, radius: float | None):
    """None, or the exact optimum when every row is violated there (large lam)."""
    everything = np.ones(rows.n_rows, dtype=bool)
    w = restricted_qp(rows, lam, weight, ~everything, everything, radius)
    return w if np.all(rows.margins(w) < 1.0) else None
