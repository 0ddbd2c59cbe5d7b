"""Cholesky factorization of the dense symmetric matrices the solvers build, without copies.

`scipy.linalg.cho_factor` scans its input for non-finite values and hands LAPACK a column-major
array, so the row-major (C-ordered) matrices numpy builds (Gram matrices, Q + diag(d), H'E^-1 H)
are copied first. A symmetric row-major matrix is its own transpose: its transposed view is
already column-major and goes to LAPACK as it is (`cho_factor_symmetric`), and a non-finite
entry shows on the factor's diagonal, which is checked instead of the whole matrix. With the
diagonal added in place (`interior_point.box_qp`), one Newton system of the box-QP method is
built and factored 2.6x faster at k = 250 and 1.3x at k = 2000 (`benchmarks/dense_cholesky.py`).
Solves with the factor go to LAPACK directly too (`cho_solve_factor`).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.linalg import blas, lapack


def cho_factor_symmetric(matrix: np.ndarray, overwrite: bool = False, lower: bool = True) -> tuple[np.ndarray, bool]:
    """(factor, lower) of a symmetric positive definite matrix, for `cho_solve_factor` (or
    `scipy.linalg.cho_solve`: the same pair `scipy.linalg.cho_factor` returns).

    The upper triangle of a row-major matrix (its lower one when column-major) is read; a
    matrix that is not exactly symmetric is factored as that triangle's symmetric completion,
    as LAPACK does. lower: the factor L L' (default: OpenBLAS's dpotrf is 1.2-1.4x faster for it
    than for R'R at k = 100-700), else R'R, reading the row-major matrix's lower triangle.
    overwrite: the matrix may be destroyed (no copy at all).

    Raises:
        numpy.linalg.LinAlgError: the matrix is not positive definite, or it holds non-finite
            values (they reach the factor's diagonal: every entry of the triangle feeds one).
    """
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"expected a square matrix, got shape {matrix.shape}")
    if matrix.flags.c_contiguous:
        column_major = matrix.T  # the same symmetric matrix, column-major, no copy
    elif matrix.flags.f_contiguous:
        column_major = matrix
    else:
        column_major, overwrite = np.asfortranarray(matrix), True
    factor, info = lapack.dpotrf(column_major, lower=lower, overwrite_a=overwrite, clean=False)
    if info > 0:
        raise np.linalg.LinAlgError(f"{info}-th leading minor not positive definite")
    if info < 0:
        raise ValueError(f"illegal value in argument {-info} of the LAPACK routine dpotrf")
    if not np.isfinite(np.diagonal(factor)).all():
        raise np.linalg.LinAlgError("the matrix holds non-finite values")
    return factor, lower


def cho_factor_gram(rows: np.ndarray, shift: float) -> tuple[np.ndarray, bool]:
    """(factor, lower) of rows' rows + shift * I (rows: (k, p), shift >= 0), for `cho_solve_factor`.

    The p x p matrix is formed by BLAS's symmetric rank-k update (one triangle: half the
    multiplications of rows.T @ rows) directly in column-major order, and factored in place.

    Raises:
        numpy.linalg.LinAlgError: not positive definite, or non-finite.
    """
    rows = np.asarray(rows, dtype=float)
    system = blas.dsyrk(1.0, rows.T, trans=0, lower=0)  # rows.T: (p, k), column-major view
    system[np.diag_indices(system.shape[0])] += shift
    # R'R from the upper triangle: here the product dominates, and its lower triangle was up to
    # 8 % slower (16,000 x 96 rows, linear MOM on the paper's shortest path).
    return cho_factor_symmetric(system, overwrite=True, lower=False)


def qr_factor_gram(rows: np.ndarray, shift: float) -> tuple[np.ndarray, bool]:
    """The factor of `cho_factor_gram` (R with R'R = rows'rows + shift I) from a QR factorization
    of [rows; sqrt(shift) I], for systems whose Gram matrix is too ill-conditioned to form.

    Forming the Gram squares the condition number: a hinge interior-point system at scaled lam
    1.2e-14 with weights 1/e from 2e-15 to 7e3 is numerically indefinite as a Gram matrix (its
    Cholesky fails), while the stacked rows have condition about 1e9 and factor fine.

    Raises:
        numpy.linalg.LinAlgError: R is singular or non-finite.
    """
    rows = np.asarray(rows, dtype=float)
    p = rows.shape[1]
    stacked = np.vstack([rows, np.sqrt(shift) * np.eye(p)])
    R = scipy.linalg.qr(stacked, mode="r", overwrite_a=True, check_finite=False)[0][:p]
    if not np.isfinite(R).all() or not np.all(np.diagonal(R)):
        raise np.linalg.LinAlgError("the stacked rows are singular or non-finite")
    return np.asfortranarray(R), False


def cho_solve_factor(factor: tuple[np.ndarray, bool], rhs: np.ndarray) -> np.ndarray:
    """matrix^{-1} rhs (rhs: (k,) or (k, r)) for the factor of `cho_factor_symmetric`, by LAPACK
    directly: no finiteness scan (the factor is finite by construction) and none of
    `scipy.linalg.cho_solve`'s checks, whose cost shows on the thousands of small solves of an
    interior-point run."""
    c, lower = factor
    if c.shape[0] == 0:  # an empty system (no rows on the margin): LAPACK refuses the shapes
        return np.array(rhs, dtype=float)
    solution, info = lapack.dpotrs(c, rhs, lower=lower)
    if info != 0:
        raise ValueError(f"illegal value in argument {-info} of the LAPACK routine dpotrs")
    return solution
