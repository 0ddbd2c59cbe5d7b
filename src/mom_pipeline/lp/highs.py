"""Solve LP batches with HiGHS and return solutions with an optimal simplex basis."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import highspy
import numpy as np

from .batch import LPBatch, as_lp_batch
from .errors import BasisError, LPSolveError


@dataclass(frozen=True)
class LPSolution:
    """Optimal solutions of a batch of T LPs.

    x: (T, n) optimal vertices; objective: (T,) optimal values c_t'x_t;
    basis: (T, m) sorted column indices of an optimal basis (A_B invertible,
    A_B^{-1} b = x_B >= 0, reduced costs of the other columns >= 0), or None when the
    caller asked for decisions only (`need_basis=False`).
    """

    x: np.ndarray
    objective: np.ndarray
    basis: np.ndarray | None


def _new_highs() -> highspy.Highs:
    # HiGHS prints its banner to the C-level stdout when constructed, before any option
    # can be set; silence it at the file-descriptor level so runs and tests stay clean.
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            highs = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("log_to_console", False)
    # Simplex so that a vertex and its basis come back (no interior point without crossover).
    highs.setOptionValue("solver", "simplex")
    return highs


def _highs_lp(A: np.ndarray, b: np.ndarray, c: np.ndarray) -> highspy.HighsLp:
    m, n = A.shape
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = m
    lp.col_cost_ = np.ascontiguousarray(c, dtype=float)
    lp.col_lower_ = np.zeros(n)
    lp.col_upper_ = np.full(n, highspy.kHighsInf)
    lp.row_lower_ = np.ascontiguousarray(b, dtype=float)
    lp.row_upper_ = np.ascontiguousarray(b, dtype=float)
    rows, cols = np.nonzero(A.T)  # column-wise nonzeros: "rows" here index columns of A
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))]).astype(np.int32)
    lp.a_matrix_.index_ = cols.astype(np.int32)
    lp.a_matrix_.value_ = A.T[rows, cols].astype(float)
    return lp


def _structural_basis(A: np.ndarray, c: np.ndarray, basic_cols: np.ndarray, basic_rows: np.ndarray) -> np.ndarray:
    """Replace basic logicals (row slacks) by structural columns, keeping dual feasibility.

    HiGHS may return a basis in which the slack of an (equality) row is basic at zero.
    Each such logical leaves by a degenerate dual-simplex pivot: the entering column is
    chosen by the two-sided ratio test on the reduced costs, so every reduced cost stays
    >= 0 and x is unchanged (the logical was at value 0).
    """
    m, n = A.shape
    cols = list(basic_cols)
    logical_rows = list(basic_rows)
    while logical_rows:
        row = logical_rows.pop()
        basis_matrix = np.column_stack([A[:, cols]] + [np.eye(m)[:, [r]] for r in logical_rows + [row]])
        cost_basic = np.concatenate([c[cols], np.zeros(len(logical_rows) + 1)])
        inv = np.linalg.inv(basis_matrix)
        y = inv.T @ cost_basic
        reduced = np.maximum(c - A.T @ y, 0.0)
        alpha = inv[-1] @ A  # tableau row of the leaving logical
        nonbasic = np.ones(n, dtype=bool)
        nonbasic[cols] = False
        scale = max(1.0, np.abs(alpha).max())
        usable = nonbasic & (np.abs(alpha) > 1e-9 * scale)
        if not usable.any():
            raise BasisError(-1, "A does not have full row rank; a logical cannot leave the basis")
        ratios = np.full(n, np.inf)
        ratios[usable] = reduced[usable] / np.abs(alpha[usable])
        best = np.flatnonzero(ratios <= ratios.min() + 1e-12)
        entering = int(best[np.argmax(np.abs(alpha[best]))])
        cols.append(entering)
    return np.sort(np.asarray(cols, dtype=np.int64))


def solve_lp_batch(A, b, C) -> LPSolution:
    """Solve min c_t'x s.t. A_t x = b_t, x >= 0 for every sample with HiGHS (simplex).

    Args:
        A: (m, n) shared or (T, m, n) per sample, full row rank.
        b: (m,) shared or (T, m).
        C: (T, n) costs.
    Returns:
        LPSolution with x (T, n), objective (T,), basis (T, m).
    Raises:
        LPInputError for bad shapes or values; LPSolveError naming the first sample that is
        infeasible, unbounded or otherwise not solved to optimality.
    """
    batch = as_lp_batch(A, b, C, check_rank=True)
    return _solve_validated(batch)


def _solve_validated(batch: LPBatch) -> LPSolution:
    T, m, n = batch.n_samples, batch.m, batch.n
    C = batch.C
    X = np.zeros((T, n))
    basis = np.zeros((T, m), dtype=np.int64)
    highs = _new_highs()
    all_cols = np.arange(n, dtype=np.int32)
    all_rows = np.arange(m, dtype=np.int32)
    kBasic = highspy.HighsBasisStatus.kBasic
    for t in range(T):
        A_t, b_t = batch.A_of(t), batch.b_of(t)
        if t == 0 or not batch.shared_A:
            highs.passModel(_highs_lp(A_t, b_t, C[t]))
        else:
            # Same constraints: change costs (and rhs) only and warm-start from the last basis.
            highs.changeColsCost(n, all_cols, C[t])
            if not batch.shared_b:
                highs.changeRowsBounds(m, all_rows, b_t, b_t)
        highs.run()
        status = highs.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise LPSolveError(t, highs.modelStatusToString(status))
        hb = highs.getBasis()
        col_basic = np.flatnonzero(np.array([s == kBasic for s in hb.col_status]))
        row_basic = np.flatnonzero(np.array([s == kBasic for s in hb.row_status]))
        if row_basic.size:
            try:
                basis[t] = _structural_basis(A_t, C[t], col_basic, row_basic)
            except BasisError as exc:
                raise BasisError(t, exc.reason) from None
        else:
            basis[t] = np.sort(col_basic)
    X, objective = vertices_from_bases(batch, basis, C)
    return LPSolution(x=X, objective=objective, basis=basis)


def basis_matrices(A, basis: np.ndarray) -> np.ndarray:
    """A_B for every sample: (T, m, m) from A (m, n) or (T, m, n) and basis (T, m)."""
    A = np.asarray(A, dtype=float)
    if A.ndim == 2:
        return np.moveaxis(A[:, basis], 0, 1)  # (m, T, m) -> (T, m, m)
    return np.take_along_axis(A, basis[:, None, :], axis=2)


MAX_CONDITION = 1e12


def checked_inverse(A_B: np.ndarray) -> np.ndarray:
    """Inverses of the basis matrices (T, m, m); BasisError names the first singular one.

    Singularity is judged by the exact 1-norm condition number ||A_B||_1 ||A_B^{-1}||_1
    (cheaper than an SVD per sample and as informative for this purpose).
    """
    try:
        inverse = np.linalg.inv(A_B)
    except np.linalg.LinAlgError:
        inverse = None
    if inverse is not None:
        condition = np.abs(A_B).sum(axis=1).max(axis=1) * np.abs(inverse).sum(axis=1).max(axis=1)
        bad = np.flatnonzero(~(condition < MAX_CONDITION))
    else:  # exactly singular somewhere: find which sample, one by one
        condition = np.linalg.cond(A_B, p=1)
        bad = np.flatnonzero(~(condition < MAX_CONDITION))
    if bad.size:
        t = int(bad[0])
        raise BasisError(t, f"basis matrix A_B is singular (condition number {condition[t]:.2e})")
    return inverse


def vertices_from_bases(batch: LPBatch, basis: np.ndarray, C: np.ndarray | None = None):
    """The basic solutions x (T, n) of the bases and, if C is given, their objectives (T,)."""
    T, n = batch.n_samples, batch.n
    inverse = checked_inverse(basis_matrices(batch.A, basis))
    x_B = np.einsum("tij,tj->ti", inverse, batch.b_stack())
    X = np.zeros((T, n))
    np.put_along_axis(X, basis, x_B, axis=1)
    # Round away solver noise so that supports are exact zeros.
    scale = np.maximum(1.0, np.abs(X).max(axis=1, keepdims=True))
    X[np.abs(X) <= 1e-11 * scale] = 0.0
    if C is None:
        return X, None
    return X, np.einsum("tn,tn->t", C, X)
