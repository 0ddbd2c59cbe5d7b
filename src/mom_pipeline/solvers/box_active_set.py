"""A warm-started primal-dual active-set method for the box QP of a working-set round.

    min_a  0.5 a'Qa + c'a    s.t.  0 <= a <= upper        (Q positive semidefinite, k x k)

Given a guess of the rows at the lower bound and at the upper bound, the rest (the free rows
F) solve Q_FF a_F = -(c_F + Q_FU upper). Free rows that leave the box and bound rows whose
gradient points into the box move, and the step repeats (the primal-dual active-set method of
Hintermueller, Ito and Kunisch). From a close guess it ends in a few steps, where the
interior-point method (`interior_point.box_qp`) needs 15-20 factorizations of the whole
k x k matrix whatever it starts from: the previous round's active sets are such a guess.
Steps after the first change few rows, so the free block is factored once and later free sets
are solved from that factorization by block elimination (`FreeBlock`) until they drift far.

It is exact: it returns only a point whose duality gap (`interior_point.box_gap`) is below
gap_tol, or whose active sets satisfy the optimality conditions with a gap below
CONSISTENT_REL_GAP of the objective; it gives up (returns None) when the free block is
singular or larger than the rank bound, or when its guesses stop settling, and the caller
runs the interior-point method.
"""

from __future__ import annotations

import warnings
from typing import Callable

import numpy as np
import scipy.linalg

from .dense_cholesky import cho_factor_symmetric, cho_solve_factor
from .interior_point import BoxQPStalled, box_gap_of_gradient, box_qp

#: Bounds on a (times upper) and on the gradient (margin units) within which a row keeps its set.
BOUND_TOL = 1e-12
#: A point whose active sets satisfy the optimality conditions is accepted when its duality gap
#: is below this times the objective's scale: Clarabel's default relative gap, the accuracy of the
#: fallback it replaces (round-off in Q a + c, |Q| up to 1e11 at small lam, keeps the absolute gap
#: of such a point near 1e-11 to 1e-10, which can exceed gap_tol on small objectives).
CONSISTENT_REL_GAP = 1e-8
#: Steps without a new low of the rows changing sets before giving up (the counts fall unevenly:
#: RBF kernel MOM rounds, 60-70 rows, then 35, 23, 26, 31, 26).
PATIENCE = 4
#: A regularization path stops guessing active sets after this many failed guesses in a row
#: (polynomial kernels: free blocks beyond the Gram matrix's rank, 0 of 44 guesses solved).
GUESS_FAILURES = 5
#: `FreeBlock` refactors when the free set differs from its factored one in more than this
#: fraction of its rows (block elimination costs about 2 n^2 per changed row against n^3 / 3).
REFACTOR_FRACTION = 0.125
#: From this many rows on, each step's free solve gets one step of iterative refinement, and rows
#: that keep changing sets are settled together (`_settle_cycling_rows`). Below it the box QPs are
#: cheap for the interior-point method, and guesses that pay there are not where the time goes.
LARGE_BOX_ROWS = 1000
#: At most this many rows (those that changed sets in the last two steps) are settled together.
CYCLING_MAX_ROWS = 256
#: A settled row within this fraction of the box of a bound (the interior-point method's
#: optimum stops short of it) is put on that bound.
SETTLED_BOUND = 1e-6


class GuessRecord:
    """Whether guessing active sets pays on a sequence of related box QPs (one regularization
    path): after GUESS_FAILURES failures in a row it stops."""

    def __init__(self):
        self.failures_in_a_row = 0

    def worth_trying(self) -> bool:
        return self.failures_in_a_row < GUESS_FAILURES

    def record(self, solved: bool) -> None:
        self.failures_in_a_row = 0 if solved else self.failures_in_a_row + 1


class FreeBlock:
    """Solves Q_FF x = r for free sets F from one Cholesky factorization of Q_BB (B: the base
    free set), by block elimination: rows of B not in F are pinned to 0 by a multiplier, rows
    of F not in B border the system; the bordered part is a small dense solve.

    Q (size x size) is seen through `block_of(rows, cols)`, which returns Q[rows][:, cols]: a dense
    matrix's blocks (`matrix_blocks`), or a Gram matrix of hinge rows computed block by block and
    never whole."""

    def __init__(self, block_of: Callable[[np.ndarray, np.ndarray], np.ndarray], size: int, base: np.ndarray):
        self.block_of, self.base = block_of, base
        self.factor = cho_factor_symmetric(block_of(base, base), overwrite=True)
        self.position = np.full(size, -1)
        self.position[base] = np.arange(base.size)
        self._bordered = None

    def drift(self, free: np.ndarray) -> int:
        """How many rows F and the base set do not share."""
        shared = int((self.position[free] >= 0).sum())
        return free.size + self.base.size - 2 * shared

    def solve(self, free: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """x with Q_FF x = rhs (free: row indices, rhs (|F|,) or (|F|, r) aligned with them). The bordered part of
        the last free set is kept, so solves repeated on one free set (iterative refinement)
        cost two triangular solves and a small one."""
        if self._bordered is None or not np.array_equal(self._bordered[0], free):
            self._bordered = (free.copy(), *self._border(free))
        _, in_base, added, solved, border, schur = self._bordered
        columns = rhs.shape[1:]  # () for one right-hand side, (r,) for r of them
        rhs_base = np.zeros((self.base.size,) + columns)
        rhs_base[self.position[free[in_base]]] = rhs[in_base]
        y = cho_solve_factor(self.factor, rhs_base)
        x = np.empty((free.size,) + columns)
        if schur is not None:
            n_removed = border.shape[1] - added.size
            target = np.concatenate([rhs[~in_base], np.zeros((n_removed,) + columns)]) - border.T @ y
            z = scipy.linalg.lu_solve(schur, target, check_finite=False)
            y = y - solved @ z
            x[~in_base] = z[:added.size]
        x[in_base] = y[self.position[free[in_base]]]
        return x

    def _border(self, free: np.ndarray):
        """(in_base, added, Q_BB^-1 border, border, LU factors of the Schur complement) of F."""
        in_base = self.position[free] >= 0
        added = free[~in_base]
        kept = np.zeros(self.base.size, dtype=bool)
        kept[self.position[free[in_base]]] = True
        removed = np.flatnonzero(~kept)  # positions in the base
        if not added.size + removed.size:
            return in_base, added, None, None, None
        border = np.zeros((self.base.size, added.size + removed.size))
        border[:, :added.size] = self.block_of(self.base, added)
        border[removed, added.size + np.arange(removed.size)] = 1.0
        solved = cho_solve_factor(self.factor, border)
        schur = -border.T @ solved
        schur[:added.size, :added.size] += self.block_of(added, added)
        with warnings.catch_warnings():
            # The pinned rows' block, -(Q_BB^-1)_RR, is on another scale than Q_AA: LAPACK
            # warns of the condition; the certificate of the caller checks the result.
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            schur = scipy.linalg.lu_factor(schur, check_finite=False)
        return in_base, added, solved, border, schur


def matrix_blocks(Q: np.ndarray) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The `block_of` of a dense matrix Q for `FreeBlock`."""
    def block_of(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return Q[np.ix_(rows, cols)]
    return block_of


def free_solve(block_of: Callable[[np.ndarray, np.ndarray], np.ndarray], size: int, block: FreeBlock | None,
               free: np.ndarray, rhs: np.ndarray):
    """(block, x): Q_FF x = rhs (Q seen through block_of, as in `FreeBlock`), reusing `block`
    unless F drifted from its base; (None, None) when the free block is singular."""
    try:
        if block is None or block.drift(free) > REFACTOR_FRACTION * free.size:
            block = FreeBlock(block_of, size, free)
        x = block.solve(free, rhs)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        return None, None
    return (block, x) if np.isfinite(x).all() else (None, None)


def _objective(a: np.ndarray, gradient: np.ndarray, c: np.ndarray) -> float:
    """0.5 a'Qa + c'a from the gradient Q a + c at hand."""
    return float(0.5 * a @ (gradient - c) + c @ a)


def _gap(Q: np.ndarray, c: np.ndarray, upper: float, a: np.ndarray, exact: bool = False):
    """(box_gap, gradient) of a feasible a (`interior_point.box_gap`); exact: the gradient in
    extended precision (for the final certificate of a point whose sets are settled)."""
    if exact:
        g = (Q.astype(np.longdouble) @ a.astype(np.longdouble) + c).astype(float)
    else:
        g = Q @ a + c
    return box_gap_of_gradient(g, upper, a), g


def box_qp_active_set(Q: np.ndarray, c: np.ndarray, upper: float, status: np.ndarray, gap_tol: float,
                      offset: float = 0.0, max_free: int | None = None,
                      max_steps: int = 15, gap_rel: float = 0.0) -> tuple[np.ndarray | None, int]:
    """argmin 0.5 a'Qa + c'a over 0 <= a <= upper from a guess of the active sets: (a, steps),
    a None when it gives up.

    Args:
        status: (k,) the guess, -1 at the lower bound, +1 at the upper bound, 0 free.
        gap_tol: the returned a has `box_gap` <= gap_tol (its objective is within gap_tol of
            the optimum), or its active sets satisfy the optimality conditions and its gap is
            below CONSISTENT_REL_GAP times |f(a) + offset|: the scale of the objective the box
            QP is the dual of (for a restricted hinge QP, -(f(a) + offset) is its dual value
            D(a), the MOM objective up to the gap, while f itself can be 1e5 times larger).
        max_free: give up when more rows than this are free (Q's rank: a larger free block
            is singular).
        max_steps: give up after this many steps, or when the number of rows that change sets
            has not reached a new low for PATIENCE steps.
        gap_rel: a point whose gap is below gap_rel * |f(a) + offset| is returned too (the
            interior-point method's relative stop, `interior_point.box_qp`).

    On LARGE_BOX_ROWS rows or more, each free solve is refined once (block elimination on Gram
    matrices of condition 1e8 and more leaves residuals that flip rows between sets), and when
    the number of rows changing sets stops falling, the rows that changed in the last two steps
    are settled together by a small box QP (`_settle_cycling_rows`): narrow RBF kernel cells
    (squared norm) whose guesses had cycled on one to five rows until they gave up.
    """
    k = c.size
    lower, at_upper = status < 0, (status > 0) & ~(status < 0)
    fewest_changes, fewest_at, previous_changes = k + 1, 0, k + 1
    previous_changed = None
    large = k >= LARGE_BOX_ROWS
    block, blocks = None, matrix_blocks(Q)
    for step in range(1, max_steps + 1):
        free = np.flatnonzero(~lower & ~at_upper)
        if max_free is not None and free.size > max_free:
            return None, step
        a = np.where(at_upper, upper, 0.0)
        if free.size:  # (full products with Q: cheaper than copying its rows F out)
            block, a[free] = free_solve(blocks, k, block, free, -(c + Q @ a)[free])
            if block is None:
                return None, step
            if large:  # one step of iterative refinement
                _, correction = free_solve(blocks, k, block, free, (Q @ a + c)[free])
                if correction is not None:
                    a[free] -= correction
        inside = np.clip(a, 0.0, upper)
        gap, g = _gap(Q, c, upper, inside)
        if gap <= max(gap_tol, gap_rel * abs(_objective(inside, g, c) + offset)):
            return inside, step
        if free.size:  # the gradient at the unclipped point decides which bound rows are released
            g = g + Q @ (a - inside)
        to_lower = ~lower & ~at_upper & (a < -BOUND_TOL * upper)
        to_upper = ~lower & ~at_upper & (a > (1.0 + BOUND_TOL) * upper)
        released = (lower & (g < -BOUND_TOL)) | (at_upper & (g > BOUND_TOL))
        changes = int(to_lower.sum() + to_upper.sum() + released.sum())
        if changes == 0:
            # The sets satisfy the optimality conditions: what gap is left is round-off. One
            # step of iterative refinement with an extended-precision residual removes most.
            if free.size:
                refined = inside.copy()
                _, residual = _gap(Q, c, upper, inside, exact=True)
                _, correction = free_solve(blocks, k, block, free, residual[free])
                if correction is not None:
                    refined[free] -= correction
                    refined = np.clip(refined, 0.0, upper)
                    refined_gap, refined_g = _gap(Q, c, upper, refined, exact=True)
                    if refined_gap < gap:
                        inside, g, gap = refined, refined_g, refined_gap
            scale = abs(_objective(inside, g, c) + offset)
            return (inside, step) if gap <= max(gap_tol, CONSISTENT_REL_GAP * scale) else (None, step)
        changed = to_lower | to_upper | released
        if changes < fewest_changes:
            fewest_changes, fewest_at = changes, step
        elif step - fewest_at >= PATIENCE:
            return None, step  # the guesses oscillate
        if large and step >= 3 and changes >= previous_changes and previous_changed is not None:
            cycling = changed | previous_changed
            settled = (_settle_cycling_rows(Q, c, upper, blocks, block, lower, at_upper, cycling)
                       if cycling.sum() <= CYCLING_MAX_ROWS else None)
            if settled is not None:
                lower, at_upper, block = settled
                previous_changes, previous_changed = changes, changed
                continue
        previous_changed = changed
        if step > 1 and changes >= previous_changes and released.sum() > 1:
            # Not settling: release only the half of the bound rows with the largest gradients
            # (rows released and pinned back in turn is how the full steps cycle).
            pull = np.where(released, np.abs(g), 0.0)
            released &= pull >= np.median(pull[released])
        previous_changes = changes
        lower = (lower & ~released) | to_lower
        at_upper = (at_upper & ~released) | to_upper
    return None, max_steps


def solve_on_guessed_sets(Q: np.ndarray, c: np.ndarray, upper: float,
                          status: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(a, Q a + c) at the optimum of the box QP over the rows guessed free (status 0), every
    other row fixed at its guessed bound (-1 lower, +1 upper), or None when that small box QP
    stalls. When the guessed bound rows are right and the free guess holds every free row of
    the optimum (it may hold more), this is the optimum: the caller certifies it by its gap.
    Unlike the active-set method, a free guess with extra rows cannot throw them out of the box
    (a nearly singular free block did that to an interior-point iterate's guess: 62 rows
    guessed free of 1,399, 17 free at the optimum)."""
    free = np.flatnonzero(status == 0)
    a = np.where(status > 0, upper, 0.0)
    gradient = Q @ a + c
    if free.size:
        try:
            a_free = box_qp(Q[np.ix_(free, free)], gradient[free], upper).solution
        except BoxQPStalled:
            return None
        a[free] = a_free
        gradient += Q[:, free] @ a_free
    return a, gradient


def _settle_cycling_rows(Q: np.ndarray, c: np.ndarray, upper: float, blocks, block: FreeBlock | None,
                         lower: np.ndarray, at_upper: np.ndarray, cycling: np.ndarray):
    """(lower, at_upper, block) with the sets of the rows C = `cycling` taken from the exact
    optimum of the box QP over a_C alone, the other free rows F solved for them and the other
    bound rows B kept where they are (block: the `FreeBlock` those solves used, kept by the
    caller so that a refactored one is not factored again); None when a solve fails (the caller
    then steps as usual).

    With a_F(a_C) = a_F0 - S a_C, S = Q_FF^-1 Q_FC, the objective in a_C is the Schur complement
    Q_CC - Q_CF S with the gradient (Q a0 + c)_C at a_C = 0: a box QP of |C| rows, which the
    interior-point method solves exactly. When F and B hold the optimum's sets, C gets the
    optimum's sets too. Rows that flip between two sets from one step to the next (a multiplier
    of -1e-3 when free, a gradient of -2e-4 at its bound) are how the guesses cycle."""
    C = np.flatnonzero(cycling)
    k = c.size
    rest = np.flatnonzero(~lower & ~at_upper & ~cycling)
    a0 = np.where(at_upper & ~cycling, upper, 0.0)
    reduced = Q[np.ix_(C, C)]
    if rest.size:
        rhs = np.column_stack([-(c + Q @ a0)[rest], -Q[np.ix_(rest, C)]])
        block, solved = free_solve(blocks, k, block, rest, rhs)
        if solved is None:
            return None
        a0[rest] = solved[:, 0]
        reduced = reduced + Q[np.ix_(C, rest)] @ solved[:, 1:]
    try:
        a_C = box_qp(0.5 * (reduced + reduced.T), (Q @ a0 + c)[C], upper).solution
    except BoxQPStalled:
        return None
    lower, at_upper = lower & ~cycling, at_upper & ~cycling
    lower[C] = a_C <= SETTLED_BOUND * upper
    at_upper[C] = a_C >= (1.0 - SETTLED_BOUND) * upper
    return lower, at_upper, block
