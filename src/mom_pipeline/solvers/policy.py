"""Which linear-algebra path solves a hinge QP of a given shape: the one place of thresholds.

Two choices, both made from sizes alone (so every solve of the same shape takes the same
path, on every machine; the dual formulation's memory budget below depends on the machine, but
it only decides whether a fit runs at all, and how many tuning folds run at once, never the
result):

* `restricted_qp_method(n_vars, n_rows, ball)`: the restricted QP of a working-set round,
  min (lam/2)||w||^2 - g'w + weight * sum_i max(0, 1 - h_i'w) over k = n_rows hinge rows
  and p = n_vars unknowns.
    - "interior_point" (`interior_point.hinge_qp_ipm`) when the rows outnumber half the
      unknowns and p <= 1000: its Newton systems are p x p, O(k p^2) a step, while Clarabel
      factors the (p + 2k)-sized KKT system with a dense k x p block (linear MOM at small
      lam: thousands of working rows, a few hundred unknowns).
    - "box_dual" (`interior_point.box_qp` on the dual) first on kernel-sized problems
      (p >= 300) with k <= 2p, and otherwise when p > max(2000, 2k): the dual is a box QP
      with a k x k Gram matrix, smaller than the primal or not much larger (kernel features).
      A polynomial kernel MOM of degree 4 (p = 21 x 70) over its lam path: 90.6 s with
      Clarabel, 63.9 s this way; degree 3 (p = 735): 19.9 s with the interior-point method
      and Clarabel, 3.8 s this way (with the adaptive working set below).
      Stopped by its duality gap (BOX_DUAL_GAP, in the rescaled MOM objective's units) when
      round-off keeps its residuals above their tolerance.
    - "clarabel" otherwise, and always with a ball constraint (a second-order cone).
  The custom paths fall back to Clarabel when they do not converge.
* `newton_system(n_vars, n_curved)`: how a Newton step of the smoothed warm start is solved.
    - "dense": the p x p Hessian, for p <= 2000 unless Woodbury is clearly cheaper;
    - "woodbury": a |Q| x |Q| system over the curved rows Q, when |Q| <= 3000 and either
      p > 2000 or (p > 500 and 2|Q| < p);
    - "cg": conjugate gradients on the Hessian operator otherwise (many features and many
      curved rows).
* `adaptive_working_set(n_vars)`: whether working-set rounds shrink their working set to
  about the margin set (kernel-sized problems).
* `path_warm_start(n_vars, n_rows)`: whether a regularization path (`hinge_path`) starts each
  constant from the previous optimum's active sets (else every constant is solved cold).

* `block_ipm_fits(T, K, q, n, d, m, threads)`: whether a dual-formulation MOM fit by the block
  interior-point method (`block_hinge_ipm`; T blocks of K coupled rows on n costs, q free
  values each, d features, m constraints, `threads` threads) fits its estimated peak in
  `block_ipm_budget()` (half of this machine's memory unless BLOCK_IPM_MAX_BYTES is set);
  otherwise MOM stops with `DualFormulationTooLarge` before it solves anything. (Clarabel on
  the whole sparse problem, the former fallback, needed 1.8-11x the block method's memory and
  3.7-24x its time on the problems measured, all but the smallest: 10 observations of a
  760-arc grid, far below any budget; docs/decisions/004-dual-formulation-memory-budget.md.)
  This is not a choice of path: a problem either runs on the block method or stops
  (`check_dual_formulation_memory`).
* `block_factorization(K, q, n)`: how its Newton steps factor blocks of K + q rows: "normal"
  (the normal matrices by batched Cholesky, each block checked, the inaccurate ones by the QR)
  up to NORMAL_FACTOR_MAX_ROWS rows, else "qr" (docs/decisions/032-normal-block-factors.md).
* `block_ipm_threads(requested, T, K, q, n, d)`: how many of the requested threads share its
  Newton steps (one on problems too small to share: the shipped inverse example ran 2x slower
  on two threads).
* `tuning_fold_threads(requested, n_folds, T, K, q, n, d, m)`: how many folds of the cost-free
  lambda tuning (`methods.cost_free_tuning`) are fitted at once, each on one thread.

`benchmarks/solver_policy.py` times every path on shapes on both sides of each threshold
and prints the table that backs these numbers (docs/performance.md keeps the last one).
"""

from __future__ import annotations

import os
from typing import Literal

from .block_hinge_ipm import newton_step_bytes

# Restricted QP: the interior-point method up to this many unknowns, when rows > unknowns / 2.
INTERIOR_POINT_MAX_VARS = 1000
# Restricted QP: the box-QP dual beyond this many unknowns (and more than twice the rows).
BOX_DUAL_MIN_VARS = 2000
# Restricted QP of a kernel-sized problem: the box-QP dual up to this many rows per unknown (its
# k x k Gram matrix is then rank-deficient, which the barrier handles). Polynomial kernel MOM,
# degree 4 (p = 1470, k = 1650-1760 working rows): 0.7 s against 2.1 s with Clarabel.
BOX_DUAL_MAX_ROWS_PER_VAR = 2
# Kernel-sized problems from this many unknowns, counted on the cost subspace the basis
# formulation solves on (`mom_solve.cost_subspace`: polynomial kernel MOM of degree 2 on the
# figures' knapsack, 10 x 15 = 150; linear MOM has at most 16 x 6 = 96 on the paper's shortest
# path): their restricted QPs with at most 2 rows per unknown go to the box-QP dual (stopped on
# its duality gap) before the other paths (Clarabel left a degree-3 cell 8e-7 above its optimum
# at lam = 1e-6; the p x p interior-point method took 19.9 s where the box dual takes 3.8 s over
# that cell's path). At 300 (the threshold on all 21 costs), degree-2 cells on the subspace took
# the linear paths: 3-8 s each instead of 0.2-0.3 s (figure 4's trial 0, degree-1 data).
KERNEL_MIN_VARS = 120
# Kernel-sized working sets start with the rows within this below the margin (at least; linear
# MOM keeps its 1e-2): the rest of the rows below it are assumed violated. From the previous
# lam's optimum, 800-2,800 of 3,750 rows sat below 0.99 on an RBF cell; assumed violated, their
# pull made the first restricted optimum jump, 580-1,430 rows broke their assumption and the
# second round's QP had 900-1,740 rows (0.15-0.86 s each). Figure 4's trial 0, side by side, one core
# each: RBF grids 1.11x / 1.31x faster (degree-1 / degree-6 data), polynomial 1.04x / 1.23x,
# figure 7's trial 0 1.2-1.25x; 0.1, 0.3 and 0.5 measured too (0.5 slower than 1e-2 on the
# polynomial grid).
KERNEL_LINEAR_BELOW = 0.2
# Kernel-sized working sets: how many times a row may leave the working set (far from the margin
# at a restricted optimum) before it stays. Leaving keeps the restricted optimum (its multiplier is
# at the bound the row goes to), and broken rows joining raise it strictly, so no working set
# recurs and the rounds end whatever this is; the cap makes that certain under round-off. With
# one leave, rows that came back stayed: the last rounds of a refit at lam = 1 (figure 4, 500
# samples, RBF gamma 5) held 2,750-2,850 rows, 40-110 of them free, 3 s each. Refits of figure 4's
# chosen RBF cells 1.15-1.5x faster (e.g. 25.1 -> 17.8 s); the tuning grids within noise.
WORKING_SET_LEAVES = 16
# Kernel-sized working sets: at most this many broken rows join per round (or as many as the
# working set holds, when more), the furthest from the margin first; the others keep their wrong
# assumption until a later round (the rounds end only when no row breaks one, so the optimum is
# the same). A restricted optimum of a few hundred rows had broken 1,500 more, and the next round's
# box QP of 2,158 rows took 1.7 s of an RBF cell's 1.9 s. Side by side, one core each: figure 4's
# RBF tunings 1.14x faster (8 trials), polynomial 1.13x (6), figure 7's 1.10x (5); a cap at half
# or twice the working set gained 1.12x / 1.10x (docs/decisions/008-kernel-working-sets.md).
WORKING_SET_JOIN_MIN = 100
# ... and the cap holds for this many rounds of a working set; later rounds take every broken row,
# so a constant can never run out of rounds (`max_rounds`) for joining too slowly.
WORKING_SET_JOIN_ROUNDS = 30
# Box-QP duals of this many rows or more try a crossover from the interior-point iterate's sets
# (`interior_point.box_qp`, `box_active_set.solve_on_guessed_sets`): figure 4's RBF tunings 1.13x
# faster, polynomial 1.03x, figure 7's 1.04x (docs/decisions/009-box-dual-solver.md).
BOX_CROSSOVER_MIN_ROWS = 50
# Box-QP dual: stopped when its duality gap (= the restricted hinge QP's) is below this.
BOX_DUAL_GAP = 1e-10
# ... or below this times the MOM objective (the restricted QP's dual value plus the linear rows'
# constant): that bounds the final objective's error by 1e-9 relative, where the gap can be
# computed (not below scaled lam ~1e-13). Narrow RBF kernel cells 1.38x faster; 1e-8 left KKT
# certificates at 1.1e-7 (docs/decisions/009-box-dual-solver.md).
BOX_DUAL_REL_GAP = 1e-9
# Newton steps: a dense p x p Hessian up to this many unknowns.
DENSE_NEWTON_MAX_VARS = 2000
# Newton steps: Woodbury with at most this many curved rows ...
WOODBURY_MAX_ROWS = 3000
# ... and, below DENSE_NEWTON_MAX_VARS, only beyond this many unknowns (and 2|Q| < p).
WOODBURY_MIN_VARS = 500


# Block interior-point method: at most this many bytes at its estimated peak; None: the share
# MACHINE_MEMORY_SHARE of this machine's memory (`machine_memory_bytes`). A fixed 6 GB had sent
# the 760-arc grid at T = 1,000 (estimated 6.2 GB) to Clarabel, which had passed 13.9 GB after
# two minutes; half the memory leaves room for the rest of a Kedro run and its datasets.
BLOCK_IPM_MAX_BYTES: float | None = None
MACHINE_MEMORY_SHARE = 0.5


class DualFormulationTooLarge(MemoryError):
    """A dual-formulation MOM fit whose estimated peak memory exceeds `block_ipm_budget()`."""


def machine_memory_bytes() -> float:
    """This machine's memory: the physical memory, or the control group's limit when lower
    (containers, batch schedulers)."""
    try:
        physical = float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows): the former fixed budget of 6 GB
        return 12.0 * 2**30
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(limit_file) as limit:
                physical = min(physical, float(limit.read().strip()))
        except (OSError, ValueError):  # no such control group, or "max" (no limit)
            continue
    return physical


def block_ipm_budget() -> float:
    """The most bytes a dual-formulation fit may use (BLOCK_IPM_MAX_BYTES, else the machine's share)."""
    if BLOCK_IPM_MAX_BYTES is not None:
        return float(BLOCK_IPM_MAX_BYTES)
    return MACHINE_MEMORY_SHARE * machine_memory_bytes()


# The block method's peak resident memory above its arrays' bytes (LAPACK's work buffers and the
# allocator, which tracemalloc does not see): measured peak RSS less the interpreter's 0.2 GB was
# 1.04-1.11x the arrays' estimate (40 arcs at T = 100,000; 180 arcs at T = 1,000 and 10,000).
BLOCK_IPM_MEMORY_MARGIN = 1.15


def block_ipm_bytes(T: int, K: int, q: int, n: int, d: int, m: int = 0, threads: int = 1,
                    r: int | None = None) -> float:
    """Estimated peak bytes of a dual-formulation fit by the block interior-point method
    (float64): the larger of its Newton steps (`block_hinge_ipm.newton_step_bytes`: the
    problem's blocks, the kept factors, the step's vectors, the Theta systems and the
    factorization chunks of `threads` threads) and of the duals y_t computed afterwards (the
    problem's blocks beside the (T, m, m) basis matrices and their factorization). r: the
    costs the block method works on (n - rank(A) with one constraint matrix; default n); the
    operators on all n costs exist while the problem is built (the second term)."""
    duals = 8.0 * T * (K * n + K * q + 2 * m * m)
    return BLOCK_IPM_MEMORY_MARGIN * max(newton_step_bytes(T, K, q, n if r is None else r, d, threads), duals)


def block_ipm_fits(T: int, K: int, q: int, n: int, d: int, m: int = 0, threads: int = 1,
                   r: int | None = None) -> bool:
    """True when the block interior-point method's estimated peak fits in `block_ipm_budget()`."""
    return block_ipm_bytes(T, K, q, n, d, m, threads, r) <= block_ipm_budget()


def check_dual_formulation_memory(T: int, n: int, m: int, q: int, d: int, threads: int = 1,
                                  r: int | None = None) -> None:
    """Stop before any solve when the block method's estimated peak (`block_ipm_bytes`) exceeds
    its budget (`block_ipm_budget`): `DualFormulationTooLarge`, naming the sizes, the most
    observations that fit and the ways out.

    T samples of n columns and m rows (standard form), q the most free reduced costs of a sample,
    d features; r the costs the block method works on (n - rank(A) with one constraint matrix).
    There is no fallback: Clarabel on the whole sparse problem needs several times more memory
    than the block method wherever the block method's is large, so it would only fail later
    (docs/decisions/004-dual-formulation-memory-budget.md).
    """
    if block_ipm_fits(T, n - m, q, n, d, m, threads, r):
        return

    def needed(samples: int) -> float:
        return block_ipm_bytes(samples, n - m, q, n, d, m, threads, r)

    budget = block_ipm_budget()
    fitting, over = 0, T  # the most observations that fit: needed() grows with T
    while over - fitting > 1:
        middle = (fitting + over) // 2
        fitting, over = (middle, over) if needed(middle) <= budget else (fitting, middle)
    origin = ("set by solvers.policy.BLOCK_IPM_MAX_BYTES" if BLOCK_IPM_MAX_BYTES is not None else
              "half of this machine's memory; solvers.policy.BLOCK_IPM_MAX_BYTES overrides it")
    raise DualFormulationTooLarge(
        f"dual-formulation MOM: {T} observations of {n} columns and {m} rows with {d} features need an estimated "
        f"{_size(needed(T))}, above the {_size(budget)} this fit may use ({origin}); "
        + (f"at most {fitting} observations of this problem fit. Fit fewer observations, use " if fitting else
           "not even one observation of this problem fits. Use ")
        + "formulation='basis' (bases completed from x*), or a machine with more memory.")


def _size(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.1f} GB" if n_bytes >= 2**30 else f"{n_bytes / 2**20:.0f} MB"


# Block interior-point method: one more thread per this much work per Newton step (the
# docstring's count, T ((K + q)^2 (K + q + n) + K n^2 + n^2 d^2)). Two threads against one
# (2026-11-27, quiet machine; `fit_many` over 9 lambdas, or one fit at T = 2000 and on the
# 180-arc grid): the shipped example's tables (T = 200) 0.49x without bounds.csv, its tuning
# 0.69-0.80x with it; the paper's shortest path (40 arcs, work 1.6e5 per sample) at T = 150,
# 300, 500, 750, 1000, 2000: 0.83, 0.80, 0.97, 0.80, 1.04-1.21, 1.28x; a 180-arc grid (1.4e7 per
# sample) at T = 100 and 300: 1.67x. Small steps lose to the threads' dispatch.
BLOCK_IPM_WORK_PER_THREAD = 7e7


def block_ipm_work(T: int, K: int, q: int, n: int, d: int) -> int:
    """The block method's work per Newton step (`block_hinge_ipm`'s count)."""
    return T * ((K + q) ** 2 * (K + q + n) + K * n * n + n * n * d * d)


def block_ipm_threads(requested: int, T: int, K: int, q: int, n: int, d: int) -> int:
    """Threads for the block method's Newton steps: the requested number, fewer when a step's
    work (BLOCK_IPM_WORK_PER_THREAD each) is too small to share (the solution is the same
    whatever the number)."""
    return int(max(1, min(requested, block_ipm_work(T, K, q, n, d) // BLOCK_IPM_WORK_PER_THREAD)))


# Cost-free lambda tuning: folds are fitted at once (one thread each) from this much work per
# Newton step of one fold's block method. A fold's whole lambda path is the unit shared, so this
# is below BLOCK_IPM_WORK_PER_THREAD; below it the folds' Python work holds the interpreter lock
# and the threads lose. Four folds of the paper's shortest path (1.6e5 per sample), nine
# lambdas, folds on two threads against one after the other (2026-11-27, night, interleaved):
# T = 200 (150 per fold, 2.4e7) 0.79x and 0.86x; T = 400 (4.7e7) 1.07x and 1.15x; T = 600 1.34x
# and 1.17x; T = 1000 (1.2e8) 1.63x and 1.63x.
TUNING_FOLD_WORK = 4e7


def tuning_fold_threads(requested: int, n_folds: int, T: int, K: int, q: int, n: int, d: int, m: int = 0) -> int:
    """Folds of a cost-free lambda tuning fitted at once, one thread each: the requested threads
    (at most n_folds) when one fold's block-method work per Newton step (T: its observations)
    reaches TUNING_FOLD_WORK and that many fits at once fit `block_ipm_budget()`, else 1."""
    threads = min(int(requested), int(n_folds))
    if threads < 2 or block_ipm_work(T, K, q, n, d) < TUNING_FOLD_WORK:
        return 1
    while threads > 1 and threads * block_ipm_bytes(T, K, q, n, d, m) > block_ipm_budget():
        threads -= 1
    return threads


def restricted_qp_method(n_vars: int, n_rows: int, ball: bool) -> Literal["interior_point", "box_dual", "clarabel"]:
    """The solver of a restricted hinge QP with `n_vars` unknowns and `n_rows` hinge rows."""
    if ball:
        return "clarabel"
    if n_vars >= KERNEL_MIN_VARS and n_rows <= BOX_DUAL_MAX_ROWS_PER_VAR * n_vars:
        return "box_dual"
    if 2 * n_rows > n_vars and n_vars <= INTERIOR_POINT_MAX_VARS:
        return "interior_point"
    if n_vars > max(BOX_DUAL_MIN_VARS, 2 * n_rows):
        return "box_dual"
    return "clarabel"


# The basis formulation works on the costs the reduced costs see (`mom_solve.cost_subspace`)
# up to this many unknowns there. The reduced rows are dense where M's were sparse, and beyond it
# the restricted QPs that fall back to Clarabel (wide RBF kernel cells at tiny lam: 375 samples,
# 3,750 unknowns instead of 7,875) factor much denser systems: a test path of 91 s did not end
# in 15 minutes. Below it: linear MOM on the paper's shortest path 1.7-2.5x faster, figure 7's
# polynomial grids 1.6-1.8x, figure 4's 1.35-1.5x (docs/decisions/006-cost-subspace.md).
COST_SUBSPACE_MAX_VARS = 2500


def cost_subspace_pays(n_vars: int) -> bool:
    """Whether the basis formulation solves on the cost subspace, with n_vars unknowns there."""
    return n_vars <= COST_SUBSPACE_MAX_VARS


def newton_system(n_vars: int, n_curved: int) -> Literal["dense", "woodbury", "cg"]:
    """How a Newton step of the smoothed warm start with `n_curved` curved rows is solved."""
    direct = n_vars <= DENSE_NEWTON_MAX_VARS
    woodbury = n_curved <= WOODBURY_MAX_ROWS and (
        not direct or (n_vars > WOODBURY_MIN_VARS and 2 * n_curved < n_vars))
    if direct and not woodbury:
        return "dense"
    return "woodbury" if woodbury else "cg"


def adaptive_working_set(n_vars: int) -> bool:
    """Whether working-set rounds drop the rows their restricted optimum put far from the margin
    (once per row) instead of growing the working set after a jump (`hinge_working_set`): from KERNEL_MIN_VARS unknowns on (kernel MOM: a polynomial
    degree-4 gamma-0.5 cell over its lam path 11.8 s -> 2.4 s with the box-QP rule). Below,
    the working sets stay as they were, so linear MOM keeps its results."""
    return n_vars >= KERNEL_MIN_VARS


# Regularization paths: start each constant from the previous optimum from this many unknowns
# on (kernel MOM: 3-6x faster at small lam; degree-2 polynomial cells of 315 unknowns too). Below, the smoothed Newton start is better: linear
# MOM on shortest path (T = 1000, 240 unknowns, 16,000 rows) took 18.7 s warm vs 7.9 s cold
# over its 9 lam values (loaded machine).
PATH_WARM_START_MIN_VARS = KERNEL_MIN_VARS


# A warm-started path without a related problem's margins steps by at most this ratio between
# constants (intermediate constants, warm starts only, between grid values further apart): RBF
# kernel MOM grids 1.5x faster on figure 4's trial 0; polynomial grids, whose later gammas start
# from the neighbouring gamma's margins, only on their first gamma (docs/decisions/010-regularization-paths.md).
PATH_MAX_RATIO = 10 ** 0.5


def path_warm_start(n_vars: int, n_rows: int) -> bool:
    """Whether a regularization path starts each constant from the previous optimum."""
    return n_vars >= PATH_WARM_START_MIN_VARS


# Network MOM (`network_margin`): the restricted QP of a working-set round goes to Clarabel's
# sparse LDL up to this many coefficients (the shared model's q x d; the per-arc model's
# cycle-space dimension x d, Theta = B W on a sparse cycle basis B), else to the block method
# on the forest coordinates. Per sample the block method is dense in the free nodes and pads
# every sample to the largest; Clarabel pays each sample's coefficients squared:
# Anaheim shared (3 x 7 coefficients), T = 100: 494 s by blocks, 32 s by Clarabel;
# per-arc 5 x 5 grid (16 x 8), T = 1,000: 30 s by Clarabel, 45 s by blocks; Sioux Falls
# (53 x 8), T = 300: 83 s against 137 s; 20 x 20 grid (361 x 8), T = 50: Clarabel's rounds
# take twice the block method's (record 021).
NETWORK_CLARABEL_MAX_COEFFICIENTS = 1000


def network_restricted_method(n_coefficients: int, per_arc: bool = False) -> Literal["detours", "clarabel", "blocks"]:
    """How network MOM solves: the per-arc model by the working set of detour cycles (faster
    than the working set over arcs on every network measured, record 030), the shared model's
    restricted QPs as above."""
    if per_arc:
        return "detours"
    return "clarabel" if n_coefficients <= NETWORK_CLARABEL_MAX_COEFFICIENTS else "blocks"


# Block interior-point method: blocks of at most this many rows (K + q) are factored by their
# normal matrices, each block checked and the inaccurate ones factored by the QR
# (`block_factors.factor_normal`); larger blocks by the QR alone. Measured in
# docs/decisions/032-normal-block-factors.md.
NORMAL_FACTOR_MAX_ROWS = 200


def block_factorization(K: int, q: int, n: int) -> Literal["normal", "qr"]:
    """How the block interior-point method factors blocks of K coupled rows and q local ones on
    n costs at each Newton step."""
    return "normal" if K + q <= NORMAL_FACTOR_MAX_ROWS else "qr"


def route_per_arc_method(dense_fits: bool) -> Literal["dense", "detours"]:
    """How `RouteMOM` fits the per-arc model when every off-route arc is usable by every sample:
    by MOM's dense dual formulation whenever its memory check passes (faster than the detour
    cycles on every network measured: 5 x 5 grid T = 1,000 0.79 s against 6.9 s CPU, 10 x 10
    grid 44 s against 260 s, Sioux Falls 7.2 s against 22 s; record 031), else by the detour
    cycles (`network_detours`), whose memory grows with the working rows only."""
    return "dense" if dense_fits else "detours"
