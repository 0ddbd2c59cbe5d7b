"""An interior-point method for a hinge QP whose blocks couple only through shared coefficients.

    min_{W, u_1..u_T}  (lam/2) ||W||_F^2
                       + weight * sum_t [ sum_k max(0, 1 - m_tk'(W z_t) - n_tk'u_t) + sum_j max(0, 1 - u_tj) ]

W (n x d) is shared by every block t; u_t (q values) belongs to block t alone and is not
regularized (each u_tj also carries its own hinge, which keeps it bounded). The K coupled rows
of block t act on W only through c_t = W z_t. A conic solver given the whole problem factors
one large sparse KKT system; here every Newton step eliminates the u_t block by block
(a QR factorization of its (K + q) x q local rows, batched over blocks, or on small blocks the
Cholesky factorization of their normal matrices where it keeps its accuracy, checked block by
block: `policy.block_factorization`) and leaves one (n d) x (n d) Schur complement

    S = lam I + sum_t kron(F_t'F_t, z_t z_t')     (F_t: see `_newton_solver`),

formed with one matrix product over the blocks, chunk by chunk. Cost per step:
O(T (K + q)^2 (K + q + n) + T K n^2 + T n^2 d^2 + (n d)^3); memory O(T (K + q)(q + n) + (n d)^2)
plus one chunk of temporaries (CHUNK_BYTES): dense in n, meant for up to a few hundred
unknowns per block (`policy.block_ipm_fits` decides what MOM hands it).

Mehrotra's predictor-corrector on  H w + s - 1 = t >= 0 (multipliers alpha) and s >= 0
(multipliers nu = weight - alpha), as `interior_point.hinge_qp_ipm`, with Gondzio's centrality
correctors on short steps and iterative refinement of every Newton solve. It stops when the primal and
dual residuals are below `tol` (relative) and the complementarity t'alpha + s'nu, which is then
the duality gap, is below gap_tol * max(|objective|, GAP_FLOOR). A solve whose residuals stop
falling once the complementarity is there raises (STALL_STEPS); with `accurate=True` every
Newton solve is refined until it is exact to round-off, which is how the caller retries it
(`methods.mom_dual`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

import numpy as np

from . import block_factors
from .dense_cholesky import cho_factor_symmetric, cho_solve_factor
from .interior_point import longest_step
from .result import SolverResult

# Newton steps factor the blocks in chunks of about this many bytes of temporaries.
CHUNK_BYTES = 2**27
# The chunks are dealt to LANES lanes (chunk k to lane k % LANES), each summing its own part of
# the Schur complement; the parts are added in lane order, so the result is the same whatever
# number of threads runs the lanes. Lanes need one Schur-sized array each: a Schur complement
# larger than LANE_BYTES is summed in one lane.
LANES = 4
LANE_BYTES = 2**26
# Gondzio centrality correctors per Newton step (each one more solve with the same factors),
# tried when the corrected Mehrotra step is shorter than CORRECTED_BELOW: on every step short
# of a full one, since a solve costs a fraction of the factorization it reuses (on the paper's
# shortest path, T = 1000: 159 Newton steps over the lambda grid instead of 181 with
# correctors only below 0.5; benchmarks in docs/decisions/001-dual-formulation-block-ipm.md).
CENTRALITY_CORRECTORS = 2
CORRECTED_BELOW = 1.0
# Iterative-refinement steps per Newton solve. With `accurate=True` (a retry after a stall),
# more steps, up to ACCURATE_REFINEMENTS, while the Newton equation's residual stays above
# ACCURATE_RESIDUAL times its right-hand side: near the optimum e can span 36 decades, and
# with one step 16 of 864 solves of warm-started grids on small problems (T = 60-400) stalled
# at dual residuals of 1e-5..1e-2 (docs/decisions/005-block-ipm-stalls.md). Refinement converges slowly there: 8
# steps rescued 14 of them, 32 steps with a warm retry all. Conjugate gradients preconditioned
# by the factorization rescued fewer. Always on (at most 8 refinements), accurate solves cost
# 35 % on the paper's shortest path at T = 1000.
REFINEMENTS = 1
ACCURATE_REFINEMENTS = 32
ACCURATE_RESIDUAL = 1e-14
# A solve whose complementarity has met its stop but whose primal or dual residual has not
# halved over STALL_STEPS Newton steps has stalled (the Newton system has lost the digits it
# needs; the stalls measured had run on for 70-80 steps without progress): it raises there
# instead of running to max_iter. Unlike a Newton system that fails at the very end, a stall is
# not accepted at the breakdown tolerances: one stopped at a dual residual of 1e-8 left the
# flows' certificate 1e-7 off, and solved again it is exact.
STALL_STEPS = 8
# The duality gap is measured relative to the objective, or to this when the objective is
# smaller (objectives of 1e-4 at lam = 1e-6: relative to 1 the gap allowed 1e-6 errors there).
GAP_FLOOR = 1e-6
# A warm start's slacks are shifted by this much off 0 (multipliers start centred).
WARM_SHIFT = 1e-2


class BlockHingeRows:
    """Products with the rows of the block hinge QP: M (T, K, n), N (T, K, q), Z (T, d).

    Rows of block t: the K coupled rows m_tk'(W z_t) + n_tk'u_t, then the q local rows u_tj;
    margins and multipliers are (T, K + q) arrays in that order. The blocks are split into
    LANES fixed parts (`parts`), each one's products computed by `each` on the thread pool when
    there is one; sums over blocks add the parts' sums in part order, so results do not depend
    on the number of threads.
    """

    def __init__(self, M: np.ndarray, N: np.ndarray, Z: np.ndarray, pool: ThreadPoolExecutor | None = None):
        self.M, self.N, self.Z = M, N, Z
        self.T, self.K, self.n = M.shape
        self.q, self.d = N.shape[2], Z.shape[1]
        size = -(-self.T // LANES)
        self.parts = [slice(start, start + size) for start in range(0, self.T, size)]
        self.pool = pool

    def each(self, function) -> list:
        """[function(part) for part in parts], on the pool's threads when there is one."""
        return _map_on(self.pool, function, self.parts)

    def margins(self, W: np.ndarray, U: np.ndarray) -> np.ndarray:
        margins = np.empty((self.T, self.K + self.q))

        def fill(part: slice) -> None:
            costs = self.Z[part] @ W.T
            margins[part, :self.K] = (self.M[part] @ costs[:, :, None])[..., 0] + (self.N[part] @ U[part, :, None])[..., 0]
            margins[part, self.K:] = U[part]

        self.each(fill)
        return margins

    def transpose(self, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """H' alpha as (W part (n, d), U part (T, q))."""
        pull_U = np.empty((self.T, self.q))

        def pull(part: slice) -> np.ndarray:
            coupled = alpha[part, None, :self.K]
            pull_U[part] = (coupled @ self.N[part])[:, 0, :] + alpha[part, self.K:]
            return (coupled @ self.M[part])[:, 0, :].T @ self.Z[part]

        return _sum_in_order(self.each(pull)), pull_U


def _map_on(pool: ThreadPoolExecutor | None, function, items) -> list:
    """[function(item) for item in items], in order, on the pool's threads when there is one."""
    return list(pool.map(function, items) if pool is not None else map(function, items))


def _sum_in_order(terms: list[np.ndarray]) -> np.ndarray:
    """The sum of the parts' fresh arrays, added in part order (into the first, without a copy:
    a Schur complement of 6,080 unknowns is 300 MB)."""
    total = terms[0]
    for term in terms[1:]:
        total += term
    return total


def _chunk_floats(K: int, q: int, n: int) -> int:
    """Floats of factorization temporaries per block that set a chunk's size (Q, R, the weighted
    rows, F, F'F)."""
    return (K + q) * (K + q) * 2 + K * n * 2 + n * n


def _chunk_blocks(T: int, K: int, q: int, n: int, d: int) -> tuple[int, int]:
    """(lanes, blocks per chunk) of a Newton step's factorization."""
    lanes = LANES if 8 * (n * d) ** 2 <= LANE_BYTES else 1
    return lanes, min(max(1, int(CHUNK_BYTES // (8 * _chunk_floats(K, q, n)))), -(-T // lanes))


# (K + q)-long vectors per block alive at a Newton step's peak: the iterate (alpha, nu, t, s),
# residuals, e, and the direction candidates of the predictor, the corrector and the Gondzio
# correctors (measured with tracemalloc, with a margin).
STEP_VECTORS = 50


def newton_step_bytes(T: int, K: int, q: int, n: int, d: int, threads: int = 1) -> float:
    """Peak bytes of `block_hinge_qp` (float64), the problem's M and N included: per block M_t,
    N_t, R_t^-1, Q'D^1/2 [M_t; 0] and STEP_VECTORS vectors of its K + q rows; the Theta system
    three times and the lane sums; and the factorization chunks running at once (one per
    thread, up to the lanes), each with the products' results and the QR's input
    (q n + q q + (K + q) q per block) beside the temporaries that size it. Checked against
    tracemalloc in tests/methods/test_block_ipm.py."""
    lanes, chunk = _chunk_blocks(T, K, q, n, d)
    per_block = K * n + K * q + q * q + q * n + (K + q) * STEP_VECTORS
    schur = 8.0 * (n * d) ** 2
    running = min(int(threads), lanes, -(-T // chunk))
    chunk_bytes = 8.0 * chunk * (_chunk_floats(K, q, n) + q * n + q * q + (K + q) * q)
    return 8.0 * T * per_block + 3 * schur + (lanes * schur if lanes > 1 else 0.0) + running * chunk_bytes


def _newton_solver(rows: BlockHingeRows, lam: float, e: np.ndarray, chunk: int | None = None,
                   normal: bool = False):
    """A function solving (Lambda + H' diag(1/e) H) (dW, dU) = (bW, bU), Lambda = lam on W, 0 on U.

    Block t's rows are [M_t N_t; 0 I] with weights D = diag(1/e). With the complete QR
    factorization D^1/2 [N_t; I] = [Q  Q_c] [R_t; 0], eliminating u_t leaves on c_t the matrix
    F_t'F_t, F_t = Q_c' D^1/2 [M_t; 0]: positive semidefinite by construction. (The textbook
    difference M'D M - M'D N (E'D E)^-1 N'D M, its Woodbury form M'(E_K + N E_q N')^-1 M, and
    their Cholesky factors lose accuracy to round-off once e spans many decades, as it does
    near the optimum: measured, their steps stall at dual residuals of 1e-5.) With `normal`,
    the same matrices come from the normal matrices block by block, where that keeps their
    accuracy, and from the QR elsewhere (`block_factors.factor_normal`: 1.3x on the paper's 5 x 5 grid, where
    most blocks keep it to the last step). The blocks are factored `chunk` at a time, so the
    K x n and (K + q)^2 temporaries never exist for every block at once; what the solves need
    is kept: R_t^-1 and Q'D^1/2 [M_t; 0] (q x q, q x n).
    With a thread pool (`rows.pool`) the lanes of chunks (LANES) are factored in parallel:
    numpy's batched QR, inverses and products release the GIL.
    """
    M, N, Z = rows.M, rows.N, rows.Z
    T, K, n, d, q = rows.T, rows.K, rows.n, rows.d, rows.q
    lanes, default_chunk = _chunk_blocks(T, K, q, n, d)
    chunk = chunk or default_chunk
    starts = list(range(0, T, chunk))
    R_inverse, QtB = np.empty((T, q, q)), np.empty((T, q, n))
    factor = block_factors.factor_normal if normal else block_factors.factor_qr

    def factor_lane(lane: int) -> np.ndarray:
        """The lane's part of sum_t kron(F_t'F_t, z_t z_t') as (n n, d d); fills its blocks'
        R_t^-1 and Q'D^1/2 [M_t; 0]."""
        schur = np.zeros((n * n, d * d))
        for start in starts[lane::lanes]:
            part = slice(start, start + chunk)
            G, R_inverse[part], QtB[part] = factor(M[part], N[part], e[part])
            outer = (Z[part, :, None] * Z[part, None, :]).reshape(-1, d * d)
            schur += G.reshape(-1, n * n).T @ outer
        return schur

    schur = _sum_in_order(_map_on(rows.pool, factor_lane, range(min(lanes, len(starts)))))
    schur = schur.reshape(n, n, d, d).transpose(0, 2, 1, 3).reshape(n * d, n * d)
    schur[np.diag_indices(n * d)] += lam
    # The R'R factor: with the faster L L' one, a knapsack fit at lam = 1e-6 (tests/methods/
    # test_block_ipm.py) ended 8.5e-9 relative above the optimum instead of at it, and its flows'
    # certified gap rose from 1.1e-9 to 5.8e-7 (the Theta system is tiny: speed does not matter).
    factor = cho_factor_symmetric(schur, overwrite=True, lower=False)
    R_inverse_T = np.swapaxes(R_inverse, 1, 2)
    QtB_T = np.swapaxes(QtB, 1, 2)

    def solve(b_W: np.ndarray, b_U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v = np.empty((T, q, 1))

        def back(part: slice) -> np.ndarray:
            v[part] = R_inverse_T[part] @ b_U[part, :, None]  # R'^-1 b_U
            return (QtB_T[part] @ v[part])[..., 0].T @ Z[part]

        rhs = b_W - _sum_in_order(rows.each(back))
        d_W = cho_solve_factor(factor, rhs.ravel()).reshape(n, d)
        d_U = np.empty((T, q))

        def forward(part: slice) -> None:
            d_U[part] = (R_inverse[part] @ (v[part] - QtB[part] @ (Z[part] @ d_W.T)[:, :, None]))[..., 0]

        rows.each(forward)
        return d_W, d_U

    return solve


def block_hinge_qp(M: np.ndarray, N: np.ndarray, Z: np.ndarray, lam: float, weight: float, tol: float = 1e-9,
                   gap_tol: float = 1e-9, breakdown_tol: float = 1e-6, breakdown_gap_tol: float = 1e-7, max_iter: int = 100,
                   start: tuple[np.ndarray, np.ndarray] | None = None, threads: int = 1,
                   accurate: bool = False, factorization: str = "auto") -> SolverResult:
    """Solve the block hinge QP (module docstring).

    Args:
        M: (T, K, n) coefficients of the coupled rows on c_t = W z_t; N: (T, K, q) their
            coefficients on u_t; Z: (T, d).
        lam > 0; weight > 0 the weight of every hinge.
        tol: relative primal and dual residuals; gap_tol: complementarity relative to the
            objective; breakdown_tol and breakdown_gap_tol: the dual residual and the relative
            complementarity accepted when the Newton system breaks down at the very end.
        start: None (a cold start) or (W, U) of a neighbouring problem (the previous lam of a
            path).
        threads: threads factoring the blocks of a Newton step (the result does not depend on it).
        accurate: refine every Newton solve until its residual is ACCURATE_RESIDUAL of its
            right-hand side (at most ACCURATE_REFINEMENTS steps): slower, for a retry after a stall.
        factorization: how the blocks are factored at each Newton step: "qr" (every block by its
            QR factorization), "normal" (by the normal matrices, the blocks that lose accuracy
            there by the QR: `block_factors.factor_normal`), or "auto", the choice of
            `policy.block_factorization` for the blocks' sizes ("qr" with `accurate`).
    Returns:
        a `SolverResult`: solution (W (n, d), U (T, q)), the objective, the iterations, status
        "optimal" or "optimal_at_breakdown" (the Newton system broke down with the certificate
        within breakdown_tol and breakdown_gap_tol), certificate the complementarity and the
        relative dual residual, extra["multipliers"] the rows' multipliers (T, K + q). Raises
        RuntimeError when the iterations stall or the Newton system breaks down, naming the
        iteration.
    """
    if int(threads) != threads or threads < 1:
        raise ValueError(f"threads must be a positive integer; got {threads!r}")
    if factorization not in ("auto", "qr", "normal"):
        raise ValueError(f"factorization must be 'auto', 'qr' or 'normal'; got {factorization!r}")
    if factorization == "auto":
        from .policy import block_factorization  # the policy imports this module's memory estimate

        factorization = "qr" if accurate else block_factorization(M.shape[1], N.shape[2], M.shape[2])
    with ThreadPoolExecutor(int(threads)) if threads > 1 else nullcontext() as pool:
        return _block_hinge_qp(M, N, Z, lam, weight, tol, gap_tol, breakdown_tol, breakdown_gap_tol, max_iter, start,
                               pool, (ACCURATE_REFINEMENTS, ACCURATE_RESIDUAL) if accurate else (REFINEMENTS, np.inf),
                               factorization == "normal")


def _block_hinge_qp(M, N, Z, lam, weight, tol, gap_tol, breakdown_tol, breakdown_gap_tol, max_iter, start, pool,
                    refinements, normal):
    most_refinements, refined = refinements
    rows = BlockHingeRows(M, N, Z, pool)
    T, R, n = M.shape[0], M.shape[1] + N.shape[2], M.shape[2]
    k = T * R
    alpha = np.full((T, R), 0.5 * weight)
    if start is None:
        W, U = np.zeros((n, Z.shape[1])), np.zeros((T, rows.q))
        s = np.full((T, R), 2.0)
    else:
        # A primal warm start with centred multipliers: the slacks of both signs of
        # (margin - 1) are shifted by WARM_SHIFT, so the first steps can move every row. (Warm
        # multipliers as well, pushed off their bounds, took more iterations than a cold start.)
        W, U = (np.array(value, dtype=float) for value in start)
        s = np.maximum(0.0, 1.0 - rows.margins(W, U)) + WARM_SHIFT
    t = rows.margins(W, U) + s - 1.0
    nu = weight - alpha
    stalled = []  # the residuals of the steps since the complementarity met its stop
    for iteration in range(1, max_iter + 1):
        pull_W, pull_U = rows.transpose(alpha)
        r_W, r_U = lam * W - pull_W, -pull_U
        margins = rows.margins(W, U)
        r_t = margins + s - 1.0 - t
        r_nu = weight - alpha - nu
        objective = 0.5 * lam * np.sum(W * W) + weight * np.maximum(0.0, 1.0 - margins).sum()
        complementarity = float(np.sum(t * alpha) + np.sum(s * nu))
        dual_residual = max(np.abs(r_W).max(), np.abs(r_U).max()) / max(1.0, np.abs(pull_W).max())
        gap_met = complementarity <= gap_tol * max(abs(objective), GAP_FLOOR)
        if dual_residual <= tol and np.abs(r_t).max() <= tol and gap_met:
            return _block_result(W, U, alpha, objective, iteration - 1, "optimal", complementarity, dual_residual)
        stalled = stalled + [max(dual_residual, np.abs(r_t).max())] if gap_met else []
        if len(stalled) > STALL_STEPS and stalled[-1] > 0.5 * stalled[-1 - STALL_STEPS]:
            raise RuntimeError(f"the block interior-point method stalled at iteration {iteration} (complementarity "
                               f"{complementarity:.3g}, dual residual {dual_residual:.3g}: no progress in "
                               f"{STALL_STEPS} steps)")
        mu = complementarity / (2 * k)
        e = s / nu + t / alpha
        if not (np.isfinite(e).all() and e.min() > 0):
            break
        # The previous step's solver goes first: its R_t^-1 and Q'D^1/2 [M_t; 0] are as large as
        # the new one's (1.7 GB at 180 arcs and T = 10,000), and both alive at once set the peak.
        solve = None
        try:
            solve = _newton_solver(rows, lam, e, normal=normal)
        except (np.linalg.LinAlgError, ValueError):
            break

        # A step that overflows at the very end is caught by the finiteness checks below;
        # numpy's warnings about it would only be noise in a run's log.
        @np.errstate(over="ignore", invalid="ignore", divide="ignore")
        def direction(rc_t, rc_s):
            """The Newton direction whose complementarity rows are t d_alpha + alpha d_t = rc_t
            and s d_nu + nu d_s = rc_s, with the step along it."""
            rho = -r_t - (rc_s - s * r_nu) / nu + rc_t / alpha
            back_W, back_U = rows.transpose(rho / e)
            b_W, b_U = -r_W + back_W, -r_U + back_U
            d_W, d_U = solve(b_W, b_U)
            # The right-hand side's size, for the accurate solves' stop only (not on the hot path).
            scale = max(np.abs(b_W).max(), np.abs(b_U).max()) if most_refinements > 1 else None
            for count in range(most_refinements):
                # Iterative refinement against the exact operator Lambda + H'D H: the
                # factorization loses digits once e spans many decades near the optimum.
                applied_W, applied_U = rows.transpose(rows.margins(d_W, d_U) / e)
                res_W, res_U = b_W - lam * d_W - applied_W, b_U - applied_U
                if count >= 1 and max(np.abs(res_W).max(), np.abs(res_U).max()) <= refined * scale:
                    break
                fix_W, fix_U = solve(res_W, res_U)
                d_W, d_U = d_W + fix_W, d_U + fix_U
            d_alpha = (rho - rows.margins(d_W, d_U)) / e
            d_nu = r_nu - d_alpha
            found = (d_W, d_U, d_alpha, d_nu, (rc_t - t * d_alpha) / alpha, (rc_s - s * d_nu) / nu)
            return found, longest_step((alpha, d_alpha), (nu, d_nu), (t, found[4]), (s, found[5]))

        # Round-off can overflow a step at the very end (e below 1e-300 on some row): then
        # the breakdown test below decides, as when the factorization fails (numpy's warnings
        # about it, here or in the correctors' products, would only be noise in a run's log).
        with np.errstate(over="ignore", invalid="ignore"):
            try:
                (_, _, d_alpha, d_nu, d_t, d_s), step = direction(-t * alpha, -s * nu)
                mu_affine = (np.sum((t + step * d_t) * (alpha + step * d_alpha))
                             + np.sum((s + step * d_s) * (nu + step * d_nu))) / (2 * k)
                target = (mu_affine / mu) ** 3 * mu
                rc_t, rc_s = target - t * alpha - d_t * d_alpha, target - s * nu - d_s * d_nu
                found, step = direction(rc_t, rc_s)
                for _ in range(CENTRALITY_CORRECTORS if step < CORRECTED_BELOW else 0):
                    # Gondzio's centrality corrector: aim at a longer step and pull the complementarity
                    # products that step would leave far from the target back into [0.1, 10] x target.
                    aim = min(1.0, 1.5 * step + 0.1)
                    d_alpha, d_nu, d_t, d_s = found[2:]
                    products_t = (t + aim * d_t) * (alpha + aim * d_alpha)
                    products_s = (s + aim * d_s) * (nu + aim * d_nu)
                    pull_t = np.clip(products_t, 0.1 * target, 10 * target) - products_t
                    pull_s = np.clip(products_s, 0.1 * target, 10 * target) - products_s
                    corrected, corrected_step = direction(rc_t + np.maximum(pull_t, -10 * target),
                                                          rc_s + np.maximum(pull_s, -10 * target))
                    if corrected_step < step + 0.1 * (aim - step):
                        break
                    found, step = corrected, corrected_step
                    rc_t, rc_s = rc_t + np.maximum(pull_t, -10 * target), rc_s + np.maximum(pull_s, -10 * target)
            except (np.linalg.LinAlgError, ValueError):
                break
        if not (np.isfinite(step) and all(np.isfinite(part).all() for part in found)):
            break
        d_W, d_U, d_alpha, d_nu, d_t, d_s = found
        step *= 0.99
        W, U, alpha, nu = W + step * d_W, U + step * d_U, alpha + step * d_alpha, nu + step * d_nu
        t, s = t + step * d_t, s + step * d_s
    if dual_residual <= breakdown_tol and complementarity <= breakdown_gap_tol * max(abs(objective), GAP_FLOOR):
        # The Newton system became numerically singular at the very end (D spanning 30 decades
        # at a tiny lam): the iterate is optimal up to a dual residual below breakdown_tol.
        return _block_result(W, U, alpha, objective, iteration - 1, "optimal_at_breakdown", complementarity,
                             dual_residual)
    raise RuntimeError(f"the block interior-point method stalled at iteration {iteration} "
                       f"(complementarity {complementarity:.3g}, dual residual {dual_residual:.3g})")


def _block_result(W, U, alpha, objective, iterations: int, status: str, complementarity: float,
                  dual_residual: float) -> SolverResult:
    return SolverResult((W, U), objective=float(objective), iterations=int(iterations), status=status,
                        path="block_ipm", certificate=dict(complementarity=float(complementarity),
                                                           dual_residual=float(dual_residual)),
                        extra=dict(multipliers=alpha))
