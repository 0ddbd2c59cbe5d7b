"""Bases for observed optimal solutions and the reduced-cost operators built on them."""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import numpy as np
import scipy.linalg

from ..blas_threads import one_blas_thread
from ..checks import first_non_finite
from .batch import as_lp_batch
from .errors import BasisError
from .highs import basis_matrices, checked_inverse

BASIS_MODES = ("solver", "support")


def check_feasible(A, b, X, tol: float = 1e-7) -> None:
    """Raise BasisError naming the first sample whose x is not feasible (Ax = b, x >= 0).

    The tolerance is relative to max(1, |b|_inf, |x|_inf) of the sample.
    """
    batch = as_lp_batch(A, b, n_samples=len(X))
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape != (batch.n_samples, batch.n):
        raise BasisError(-1, f"X must be ({batch.n_samples}, {batch.n}); got shape {X.shape}")
    where = first_non_finite(X)
    if where is not None:
        raise BasisError(where[0], f"x* has a non-finite (NaN or infinite) entry ({X[where]}) in column {where[1]}")
    scale = np.maximum(1.0, np.maximum(np.abs(X).max(axis=1), np.abs(batch.b_stack()).max(axis=1)))
    residual = np.abs(np.einsum("tmn,tn->tm", batch.A_stack(), X) - batch.b_stack()).max(axis=1)
    bad = np.flatnonzero(residual > tol * scale)
    if bad.size:
        t = int(bad[0])
        raise BasisError(t, f"x* is not feasible: max |A x* - b| = {residual[t]:.3g}")
    negative = X.min(axis=1)
    bad = np.flatnonzero(negative < -tol * scale)
    if bad.size:
        t = int(bad[0])
        raise BasisError(t, f"x* is not feasible: it has a negative entry ({negative[t]:.3g})")


def _complete_support(A: np.ndarray, support: np.ndarray, sample: int, tol: float) -> np.ndarray:
    """Complete the columns `support` of A to m columns with A_B invertible.

    Deterministic: the extra columns are the pivots of a QR factorization with column
    pivoting of the other columns projected onto the orthogonal complement of range(A_S),
    i.e. the columns that add the most new directions, in a fixed order.
    """
    m, n = A.shape
    k = support.size
    if k > m:
        raise BasisError(sample, f"x* is not a vertex: {k} positive entries but only {m} constraints")
    A_S = A[:, support]
    if k:
        q, r, _ = scipy.linalg.qr(A_S, mode="economic", pivoting=True)
        diag = np.abs(np.diag(r))
        if diag.min() <= tol * max(1.0, diag.max()):
            raise BasisError(sample, "x* is not a vertex: the columns of its support are linearly dependent")
    if k == m:
        return np.sort(support)
    others = np.setdiff1d(np.arange(n), support)
    residual = A[:, others]
    if k:
        residual = residual - q @ (q.T @ residual)
    _, r2, pivots = scipy.linalg.qr(residual, mode="economic", pivoting=True)
    need = m - k
    diag2 = np.abs(np.diag(r2))[:need]
    if diag2.size < need or diag2.min() <= tol * max(1.0, np.abs(A).max()):
        raise BasisError(sample, "A does not have full row rank: the support of x* cannot be completed to a basis")
    return np.sort(np.concatenate([support, others[pivots[:need]]]))


def basis_from_solution(A, b, X, tol: float = 1e-9) -> np.ndarray:
    """A basis for each observed optimal solution from x* alone (inverse LP, c unknown).

    The support {j: x*_j > tol * scale} is completed to m columns with A_B invertible
    (see `_complete_support`). Samples with the same support and shared A share the work.

    Args:
        A: (m, n) or (T, m, n); b: (m,) or (T, m); X: (T, n) observed optimal solutions.
    Returns:
        (T, m) sorted basis indices.
    Raises:
        BasisError naming the sample when x* is infeasible, not a vertex, or A is rank deficient.
    """
    X = np.asarray(X, dtype=float)
    batch = as_lp_batch(A, b, n_samples=X.shape[0] if X.ndim == 2 else None)
    check_feasible(batch.A, batch.b, X)
    scale = np.maximum(1.0, np.abs(X).max(axis=1, keepdims=True))
    positive = X > tol * scale
    T, m = batch.n_samples, batch.m
    basis = np.empty((T, m), dtype=np.int64)
    # One BLAS thread: these are many small pivoted QRs, which a multi-threaded BLAS on a loaded
    # 2-core machine ran 50-80x slower (10 x 10 grid, 208 supports: 27 s vs 0.33 s).
    with one_blas_thread():
        if batch.shared_A:
            patterns, first, inverse = np.unique(positive, axis=0, return_index=True, return_inverse=True)
            for p, pattern in enumerate(patterns):
                basis[inverse.ravel() == p] = _complete_support(batch.A, np.flatnonzero(pattern), int(first[p]),
                                                                1e-10)
        else:
            for t in range(T):
                basis[t] = _complete_support(batch.A[t], np.flatnonzero(positive[t]), t, 1e-10)
    return basis


def nonbasic_indices(basis: np.ndarray, n: int) -> np.ndarray:
    """(T, n - m) sorted indices of the columns not in each basis."""
    T, m = basis.shape
    mask = np.ones((T, n), dtype=bool)
    np.put_along_axis(mask, basis, False, axis=1)
    return np.nonzero(mask)[1].reshape(T, n - m)


_OPERATOR_CACHE: "OrderedDict[bytes, tuple[np.ndarray, np.ndarray]]" = OrderedDict()
_OPERATOR_CACHE_SIZE = 8
# The cache holds at most this many bytes of operators, and none larger. Counted by entries
# alone it kept up to 8 operators of T (n - m) n floats: on the 760-arc grid at T = 1,000 one
# is 2.2 GB, so a 4-fold tuning and its final fit would keep about 9 GB (4 x 1.65 + 2.2). An
# operator that large takes a few percent of its fit to build (5.0 s at T = 300 there).
OPERATOR_CACHE_BYTES = 2**28


def reduced_cost_operator(A, basis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The matrices M_t with r_N = M_t c (see `build_reduced_cost_operator`), memoized.

    Tuning fits many models on the same training samples; the operator of those samples is
    built once and shared (the key hashes the contents of A and the bases; the returned
    arrays are read-only so that no caller can change a shared copy). Operators above
    OPERATOR_CACHE_BYTES are built each time: their build is a few percent of their fit.
    """
    A = np.ascontiguousarray(A, dtype=float)
    basis = np.ascontiguousarray(basis, dtype=np.int64)
    digest = hashlib.sha1(A.tobytes())
    digest.update(str((A.shape, basis.shape)).encode())
    digest.update(basis.tobytes())
    key = digest.digest()
    if key in _OPERATOR_CACHE:
        _OPERATOR_CACHE.move_to_end(key)
        return _OPERATOR_CACHE[key]
    M, nonbasic = build_reduced_cost_operator(A, basis)
    M.flags.writeable = False
    nonbasic.flags.writeable = False
    if M.nbytes + nonbasic.nbytes > OPERATOR_CACHE_BYTES:
        return M, nonbasic
    _OPERATOR_CACHE[key] = (M, nonbasic)
    while len(_OPERATOR_CACHE) > _OPERATOR_CACHE_SIZE or _cached_bytes() > OPERATOR_CACHE_BYTES:
        _OPERATOR_CACHE.popitem(last=False)
    return M, nonbasic


def _cached_bytes() -> int:
    return sum(M.nbytes + nonbasic.nbytes for M, nonbasic in _OPERATOR_CACHE.values())


def build_reduced_cost_operator(A, basis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The matrices M_t with r_N = M_t c, the reduced costs of the non-basic variables.

    r_N' = c_N' - c_B' A_B^{-1} A_N, so M_t = E_N - (A_B^{-1} A_N)' E_B with E the
    column selectors. Built for all samples with one batched solve.

    Args:
        A: (m, n) shared or (T, m, n); basis: (T, m) column indices.
    Returns:
        M: (T, n - m, n) and nonbasic: (T, n - m) indices, row k of M_t belonging to
        column nonbasic[t, k].
    Raises:
        BasisError naming the first sample whose A_B is singular.
    """
    A = np.asarray(A, dtype=float)
    basis = np.asarray(basis, dtype=np.int64)
    if basis.ndim != 2:
        raise BasisError(-1, f"basis must be (T, m); got shape {basis.shape}")
    T, m = basis.shape
    n = A.shape[-1]
    if A.shape[-2] != m:
        raise BasisError(-1, f"basis has {m} columns per sample but A has {A.shape[-2]} rows")
    if A.ndim == 3 and A.shape[0] != T:
        raise BasisError(-1, f"A has {A.shape[0]} samples but basis has {T}")
    if basis.min() < 0 or basis.max() >= n:
        bad = int(np.flatnonzero((basis < 0).any(axis=1) | (basis >= n).any(axis=1))[0])
        raise BasisError(bad, f"basis index out of range [0, {n})")
    nonbasic = nonbasic_indices(basis, n)
    inverse = checked_inverse(basis_matrices(A, basis))
    tableau = inverse @ basis_matrices(A, nonbasic)  # A_B^{-1} A_N, (T, m, n - m)
    # Freed before M exists: with M they had set the peak of a large fit (T m^2 each, 1.3 GB at
    # T = 1,000 on the 760-arc grid).
    del inverse
    M = np.zeros((T, n - m, n))
    rows = np.arange(n - m)
    t_idx = np.arange(T)[:, None]
    M[t_idx, rows[None, :], nonbasic] = 1.0
    M[t_idx[:, :, None], rows[None, :, None], basis[:, None, :]] = -np.swapaxes(tableau, 1, 2)
    return M, nonbasic


def reduced_costs(M: np.ndarray, C: np.ndarray) -> np.ndarray:
    """r_t = M_t c_t for every sample: (T, n - m)."""
    return np.einsum("tkn,tn->tk", M, np.asarray(C, dtype=float))
