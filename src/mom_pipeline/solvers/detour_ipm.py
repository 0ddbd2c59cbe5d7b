"""An interior-point method for MOM's network QP written on detour cycles.

    min_{W, s >= 0}  (lam/2) ||W||_F^2 + weight * sum_t sum_a s_ta
    s.t.             P_tk' (W z_t) + sum_a C_tka s_ta >= h_tk      (every detour k of block t)

W (q, d) is shared by every block; the slacks s_t (A values) belong to block t alone, and the
0/1 matrix C_t says which of them each of its K rows adds up. On a network LP a row is a
cycle of the route and one detour (`network_detours`): P_tk its incidence in an orthonormal
basis of the cycle space, h_tk its number of off-route arcs, s_ta the margin slack of arc a.

Every Newton step eliminates the rows' and the slacks' unknowns block by block: with
D_g = beta / g (rows) and D_s = nu / s (slacks), block t leaves on W z_t the matrix
P_t' E_t P_t, E_t = (D_g^-1 + C_t D_s^-1 C_t')^-1: a K x K sum of positive terms, factored by
Cholesky, whose inverse factor turns P_t into Y_t with Y_t'Y_t = P_t' E_t P_t (no
differences, so nothing cancels as the barrier weights spread over many decades). The
(q d) x (q d) Schur complement

    S = lam I + sum_t kron(Y_t'Y_t, z_t z_t')

is one matrix product over the blocks, (q^2, T) x (T, d^2), chunk by chunk. Cost per step
O(T K^2 (K + A + q) + T K q^2 + T q^2 d^2 + (q d)^3), dense only in the K rows a block carries
(tens of detours where the dense dual formulation carries every arc and node).

Mehrotra's predictor-corrector with one step length; it stops when the primal and dual
residuals are below `tol` (relative) and the complementarity, which is then the duality gap,
is below gap_tol * max(|objective|, GAP_FLOOR).
"""

from __future__ import annotations

import numpy as np

from .dense_cholesky import cho_factor_symmetric, cho_solve_factor
from .result import SolverResult
from .triangular import upper_triangular_inverse

#: Blocks per chunk of a Newton step's Schur sum: the chunk's (chunk, q, q) temporaries stay
#: near CHUNK_BYTES, and at most CHUNK_BLOCKS blocks of similar sizes share one padding.
CHUNK_BYTES = 2**27
CHUNK_BLOCKS = 64
GAP_FLOOR = 1e-6
STALL_STEPS = 5
STALL_GAP = 1e-7
#: A warm start's slacks and surpluses are shifted this far off 0, its multipliers this share of the weight.
WARM_SHIFT = 1e-2
#: Iterative-refinement steps of every Newton solve (on the whole Newton system).
REFINEMENTS = 2
#: Fraction of the way to the boundary a step goes.
STEP_BACK = 0.99


class DetourBlocks:
    """The rows of the detour QP, padded to K rows and A slacks per block: P (T, K, q), C
    (T, K, A) 0/1, h (T, K); padding rows carry P = 0, C = 0 and h = -1 (always slack), and
    padding slacks a zero column of C (their optimum is 0)."""

    def __init__(self, P: np.ndarray, C: np.ndarray, h: np.ndarray, Z: np.ndarray,
                 rows: np.ndarray | None = None, slacks: np.ndarray | None = None):
        self.P, self.C, self.h, self.Z = P, C, h, Z
        self.T, self.K, self.q = P.shape
        self.A, self.d = C.shape[2], Z.shape[1]
        # Each block's own rows and slacks (the first ones; the rest is padding).
        self.rows = np.full(self.T, self.K) if rows is None else np.asarray(rows)
        self.slacks = np.full(self.T, self.A) if slacks is None else np.asarray(slacks)

    def chunks(self) -> list[np.ndarray]:
        """The blocks in chunks of similar sizes (sorted by rows, then slacks), each about
        CHUNK_BYTES of Newton-step temporaries."""
        order = np.lexsort((self.slacks, self.rows))
        chunks, start = [], 0
        while start < self.T:
            stop = start + 1
            while stop < self.T and stop - start < CHUNK_BLOCKS:
                k, a = self.rows[order[stop]], self.slacks[order[stop]]
                if 8 * (stop + 1 - start) * ((k + a) ** 2 + self.q * self.q + k * self.q) > CHUNK_BYTES:
                    break
                stop += 1
            chunks.append(np.sort(order[start:stop]))
            start = stop
        return chunks

    def row_values(self, W: np.ndarray, s: np.ndarray) -> np.ndarray:
        """P_t (W z_t) + C_t s_t, (T, K)."""
        costs = self.Z @ W.T                                            # (T, q)
        return (self.P @ costs[:, :, None])[..., 0] + (self.C @ s[:, :, None])[..., 0]

    def pull(self, beta: np.ndarray) -> np.ndarray:
        """sum_t (P_t' beta_t) z_t', (q, d)."""
        return (beta[:, None, :] @ self.P)[:, 0, :].T @ self.Z

    def slack_pull(self, beta: np.ndarray) -> np.ndarray:
        """C_t' beta_t, (T, A)."""
        return (beta[:, None, :] @ self.C)[:, 0, :]


def detour_qp(blocks: DetourBlocks, lam: float, weight: float, tol: float = 1e-8, gap_tol: float = 1e-9,
              max_iter: int = 200, start: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> SolverResult:
    """The detour QP's optimum (module docstring). start: (W, s, beta) of a related problem
    (a working set's previous round, padded to these blocks), shifted WARM_SHIFT into the
    interior. Returns a `SolverResult` with solution (W (q, d), s (T, A)),
    extra["multipliers"] = beta (T, K) (the rows' multipliers)."""
    T, K, A, q, d = blocks.T, blocks.K, blocks.A, blocks.q, blocks.d
    h = blocks.h
    if start is None:
        W = np.zeros((q, d))
        s, g = np.ones((T, A)), np.ones((T, K))
        beta, nu = np.full((T, K), weight), np.full((T, A), weight)
    else:
        W, s, beta = start
        s, beta = np.maximum(s, WARM_SHIFT), np.maximum(beta, WARM_SHIFT * weight)
        g = np.maximum(blocks.row_values(W, s) - h, WARM_SHIFT)
        nu = np.maximum(weight - blocks.slack_pull(beta), WARM_SHIFT * weight)
    n_pairs = T * (K + A)
    scale_h = 1.0 + np.abs(h).max(initial=0.0)
    history = []
    for iteration in range(1, max_iter + 1):
        R_g = blocks.row_values(W, s) - h - g
        R_s = weight - blocks.slack_pull(beta) - nu
        R_W = lam * W - blocks.pull(beta)
        mu = (np.vdot(g, beta) + np.vdot(s, nu)) / n_pairs
        objective = 0.5 * lam * np.sum(W**2) + weight * s.sum()
        primal_res = np.abs(R_g).max() / scale_h
        dual_res = max(np.abs(R_s).max() / weight, np.abs(R_W).max() / max(1e-12, np.abs(lam * W).max(initial=0.0), weight))
        gap = mu * n_pairs
        history.append((iteration, objective, primal_res, dual_res, gap))
        converged = primal_res <= tol and dual_res <= tol
        relative_gap = gap / max(abs(objective), GAP_FLOOR)
        # Near the optimum of a degenerate problem (detours sharing arcs leave their multipliers
        # free to trade) the complementarity can stop falling at round-off: accepted there once
        # it has not halved in STALL_STEPS steps and is below STALL_GAP.
        stalled = (len(history) > STALL_STEPS and gap > 0.5 * history[-1 - STALL_STEPS][4]
                   and relative_gap <= STALL_GAP)
        if converged and (relative_gap <= gap_tol or stalled):
            return SolverResult((W, s), objective=float(objective), iterations=iteration,
                                status="optimal" if relative_gap <= gap_tol else "optimal_inaccurate",
                                path="detour_ipm",
                                certificate=dict(primal_residual=float(primal_res), dual_residual=float(dual_res),
                                                 complementarity=float(gap), relative_gap=float(relative_gap)),
                                extra=dict(multipliers=beta, surplus=g, history=history))
        solve = _newton_solver(blocks, lam, g / beta, s / nu)

        def reduced(rW, rs, rg, rcg, rcs):
            """The Newton equations lam dW - sum P'd_beta z' = rW, C'd_beta + d_nu = rs,
            P dW z + C d_s - d_g = rg, beta d_g + g d_beta = rcg, nu d_s + s d_nu = rcs."""
            a_s = (rcs - s * rs) / nu
            b = rg - (blocks.C @ a_s[:, :, None])[..., 0] + rcg / beta
            dW, d_beta = solve(b, rW)
            d_s = (s / nu) * blocks.slack_pull(d_beta) + a_s
            d_g = (rcg - g * d_beta) / beta
            d_nu = (rcs - nu * d_s) / s
            return dW, d_s, d_g, d_beta, d_nu

        def direction(rcg, rcs):
            """The Newton direction, refined on all five equations: the reduced solve's
            round-off (its Schur complement spans many decades near the optimum) would
            otherwise stay in whichever equation is eliminated last."""
            rhs = (-R_W, R_s, -R_g, rcg, rcs)
            step_ = reduced(*rhs)
            for _ in range(REFINEMENTS):
                dW, d_s, d_g, d_beta, d_nu = step_
                errors = (rhs[0] - lam * dW + blocks.pull(d_beta),
                          rhs[1] - blocks.slack_pull(d_beta) - d_nu,
                          rhs[2] - blocks.row_values(dW, d_s) + d_g,
                          rhs[3] - beta * d_g - g * d_beta,
                          rhs[4] - nu * d_s - s * d_nu)
                step_ = tuple(x + y for x, y in zip(step_, reduced(*errors)))
            return step_

        aff = direction(-g * beta, -s * nu)
        step = _step(s, g, beta, nu, aff)
        mu_aff = (np.vdot(g + step * aff[2], beta + step * aff[3]) + np.vdot(s + step * aff[1], nu + step * aff[4])) / n_pairs
        sigma = (mu_aff / mu) ** 3
        dW, d_s, d_g, d_beta, d_nu = direction(sigma * mu - g * beta - aff[2] * aff[3],
                                               sigma * mu - s * nu - aff[1] * aff[4])
        step = STEP_BACK * _step(s, g, beta, nu, (dW, d_s, d_g, d_beta, d_nu), back=1.0)
        step = min(1.0, step)
        W = W + step * dW
        s, g = s + step * d_s, g + step * d_g
        beta, nu = beta + step * d_beta, nu + step * d_nu
    raise RuntimeError(f"detour QP: not solved in {max_iter} interior-point iterations "
                       f"(primal {primal_res:.1e}, dual {dual_res:.1e}, gap {gap:.1e})")


def _step(s, g, beta, nu, direction, back: float = 1.0) -> float:
    """The longest step in [0, 1 / back] keeping s, g, beta, nu positive."""
    _, d_s, d_g, d_beta, d_nu = direction
    longest = np.inf
    for value, change in ((s, d_s), (g, d_g), (beta, d_beta), (nu, d_nu)):
        negative = change < 0
        if negative.any():
            longest = min(longest, float((-value[negative] / change[negative]).min()))
    return min(1.0 / back, longest)


def _newton_solver(blocks: DetourBlocks, lam: float, row_inverse: np.ndarray, slack_inverse: np.ndarray):
    """A function (b, r_W) -> (dW, d_beta) solving the reduced Newton system
    E_t^-1 d_beta_t + P_t (dW z_t) = b_t, lam dW - sum_t P_t' d_beta_t z_t' = r_W."""
    P, C, Z = blocks.P, blocks.C, blocks.Z
    T, K, A, q, d = blocks.T, blocks.K, blocks.A, blocks.q, blocks.d
    # Blocks are factored in chunks of similar sizes (`DetourBlocks.order`), each padded only
    # to its own largest block: padding rows (C = 0, P = 0) keep E = D_g, Y = 0.
    root_g = 1.0 / np.sqrt(row_inverse)
    Vt = np.zeros((T, K, K))
    Vt[:, np.arange(K), np.arange(K)] = root_g
    Y = np.zeros((T, K, q))
    schur = np.zeros((q * q, d * d))
    Z2 = (Z[:, :, None] * Z[:, None, :]).reshape(T, d * d)
    for part in blocks.chunks():
        k, a = int(blocks.rows[part].max(initial=1)), int(blocks.slacks[part].max(initial=1))
        k, a = max(k, 1), max(a, 1)
        # E = (D_g^-1 + C D_s^-1 C')^-1 = D_g^1/2 (N'N)^-1 D_g^1/2 with N = [I; D_s^-1/2 C' D_g^1/2],
        # from the R of N's QR: forming the sum loses its small eigenvalues to round-off (two
        # detours sharing an arc whose slack is positive), N holds only square roots.
        stacked = np.zeros((part.size, k + a, k))
        stacked[:, np.arange(k), np.arange(k)] = 1.0
        stacked[:, k:] = (np.sqrt(slack_inverse[part, :a])[:, :, None] * C[part, :k, :a].transpose(0, 2, 1)
                          * root_g[part, None, :k])
        R = np.linalg.qr(stacked, mode="r")
        Vt_part = upper_triangular_inverse(R).transpose(0, 2, 1) * root_g[part, None, :k]  # E = Vt'Vt
        Vt[part, :k, :k] = Vt_part
        Y_part = Vt_part @ P[part, :k]                                   # Y'Y = P'EP
        Y[part, :k] = Y_part
        gram = Y_part.transpose(0, 2, 1) @ Y_part                        # (chunk, q, q)
        schur += gram.reshape(-1, q * q).T @ Z2[part]
    S = schur.reshape(q, q, d, d).transpose(0, 2, 1, 3).reshape(q * d, q * d)
    S[np.arange(q * d), np.arange(q * d)] += lam
    factor = cho_factor_symmetric(S, overwrite=True)

    def solve(b: np.ndarray, r_W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        u = (Vt @ b[:, :, None])[..., 0]
        rhs = r_W + (u[:, None, :] @ Y)[:, 0, :].T @ Z                 # r_W + sum P'E b z'
        dW = cho_solve_factor(factor, rhs.reshape(-1)).reshape(q, d)
        v = u - (Y @ (Z @ dW.T)[:, :, None])[..., 0]
        d_beta = (v[:, None, :] @ Vt)[:, 0, :]                          # E (b - P dW z)
        return dW, d_beta

    return solve
