"""How the block interior-point method (`block_hinge_ipm`) factors a chunk of its blocks: by
the complete QR of each block's local rows, or by their normal matrices, each block checked and
the inaccurate ones by the QR (`policy.block_factorization` chooses; record 032)."""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from .triangular import upper_triangular_inverse

# Blocks factored by their normal matrices (`factor_normal`) are factored again by the QR when
# they lost more than this factor to round-off (a pivot of the unit-diagonal Cholesky factor
# below its inverse, or F'F's diagonal below its inverse times M'D M's).
NORMAL_MAX_LOSS = 1e6


def factor_qr(M: np.ndarray, N: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(F_t'F_t, R_t^-1, Q'D^1/2 [M_t; 0]) of blocks (M, N (b, K, n), (b, K, q)) with row weights
    1/e (b, K + q), by the complete QR factorization of D^1/2 [N_t; I] (`block_hinge_ipm._newton_solver`)."""
    K, q = N.shape[1:]
    root = 1.0 / np.sqrt(e)
    local = np.concatenate([root[:, :K, None] * N, root[:, K:, None] * np.eye(q)], axis=1)
    Q, R = np.linalg.qr(local, mode="complete")  # (b, K + q, K + q)
    weighted_M = root[:, :K, None] * M
    QtB = np.swapaxes(Q[:, :K, :q], 1, 2) @ weighted_M  # Q' D^1/2 [M; 0]
    F = np.swapaxes(Q[:, :K, q:], 1, 2) @ weighted_M  # (b, K, n)
    return np.swapaxes(F, 1, 2) @ F, upper_triangular_inverse(R[:, :q]), QtB


def factor_normal(M: np.ndarray, N: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`factor_qr`'s three arrays from the normal matrices, each block checked, the blocks that
    fail the check by `factor_qr`.

    With D = diag(1/e): P_t = N_t'D_K N_t + D_q = R_t'R_t (R_t = L_t' of a batched Cholesky
    factorization, P_t first scaled to a unit diagonal), Q'D^1/2 [M_t; 0] = R_t^-T N_t'D_K M_t,
    and F_t'F_t = M_t'D_K M_t - (Q'D^1/2 [M_t; 0])'(Q'D^1/2 [M_t; 0]): the same matrices as the
    QR's in exact arithmetic. In floating point the normal matrices lose what the QR keeps when
    e spans many decades (docs/decisions/001-dual-formulation-block-ipm.md): a block whose scaled
    Cholesky factor has a pivot below 1/NORMAL_MAX_LOSS, or whose F_t'F_t lost more than a
    factor NORMAL_MAX_LOSS of M_t'D_K M_t's diagonal to the difference, or whose factors are not
    finite, is factored again by the QR. The others agree with the QR to about
    1e-16 NORMAL_MAX_LOSS of their size (docs/decisions/032-normal-block-factors.md)."""
    K, q = N.shape[1:]
    weight = 1.0 / e
    weighted_N = weight[:, :K, None] * N
    P = np.swapaxes(N, 1, 2) @ weighted_N
    diagonal = np.einsum("bii->bi", P)  # a view: the weights of the local rows join in place
    diagonal += weight[:, K:]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        scale = 1.0 / np.sqrt(diagonal)
        scaled = scale[:, :, None] * P * scale[:, None, :]
        L, good = batched_cholesky(scaled)
        pivots = np.einsum("bii->bi", L) ** 2  # 1 on a well-conditioned block, tiny near a singular one
        # R = L' diag(1/scale), so R^-1 = diag(scale) L'^-1.
        R_inverse = scale[:, :, None] * upper_triangular_inverse(np.swapaxes(L, 1, 2))
        QtB = np.swapaxes(R_inverse, 1, 2) @ (np.swapaxes(weighted_N, 1, 2) @ M)
        MtDM = np.swapaxes(M, 1, 2) @ (weight[:, :K, None] * M)
        G = MtDM - np.swapaxes(QtB, 1, 2) @ QtB
        kept = np.einsum("bii->bi", G).max(axis=1) * NORMAL_MAX_LOSS >= np.einsum("bii->bi", MtDM).max(axis=1)
    good &= (pivots.min(axis=1) * NORMAL_MAX_LOSS >= 1.0) & kept
    good &= np.isfinite(R_inverse).all(axis=(1, 2)) & np.isfinite(G).all(axis=(1, 2))
    if not good.all():
        redo = np.flatnonzero(~good)
        G[redo], R_inverse[redo], QtB[redo] = factor_qr(M[redo], N[redo], e[redo])
    return G, R_inverse, QtB


def batched_cholesky(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(L, good): the lower Cholesky factors of the (b, q, q) matrices P and which of them
    factored (numpy's batched factorization raises for the whole batch when one fails; those
    batches are factored one matrix at a time by LAPACK, the failed ones left as identities)."""
    try:
        return np.linalg.cholesky(P), np.ones(P.shape[0], dtype=bool)
    except np.linalg.LinAlgError:
        pass
    L = np.empty_like(P)
    good = np.ones(P.shape[0], dtype=bool)
    eye = np.eye(P.shape[1])
    for index, matrix in enumerate(P):
        # The row-major matrix's transpose is column-major: LAPACK's upper factor of it is L'.
        factor, info = lapack.dpotrf(matrix.T, lower=False, clean=True)
        good[index] = info == 0
        L[index] = factor.T if info == 0 else eye
    return L, good
