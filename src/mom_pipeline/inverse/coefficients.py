"""Theta by the user's variables: the standard-form cost model folded back onto the LP as written.

MOM learns costs c' = Theta' z for every standard-form column (`standard_form`), slacks
included. Costs that differ by A'y give the same decisions on {A x' = b, x' >= 0} (the
objective moves by the constant y'b), and a slack column is a unit column: with y_r the slack's
cost on its row r, c' - A'y costs nothing on every slack and decides as c' does. What is left
lives on the main columns, which are the user's variables shifted or flipped (x'_j = x_j - lower_j
or upper_j - x_j), so the user's cost of x_j is the main column's cost times the sign of that map.
A free variable has two columns, x+_j and x-_j: its cost is one number only when the two costs
are opposite; otherwise the table gives the cost of x_j on each side of 0.
"""

from __future__ import annotations

import logging

import numpy as np

from .schema import InverseProblem

log = logging.getLogger(__name__)

#: Relative tolerance of "the two halves of a free variable cost the same" and of the checks.
FOLD_RTOL = 1e-9


def _slack_rows(A: np.ndarray, slacks: np.ndarray) -> np.ndarray:
    """The row of every slack column (each is a unit column e_r in every sample)."""
    columns = A[..., slacks]  # (m, k) or (T, m, k)
    rows = np.argmax(np.abs(columns), axis=-2)  # (k,) or (T, k)
    if rows.ndim == 2:
        if (rows != rows[0]).any():
            raise ValueError("a slack column sits on different rows across observations")
        rows = rows[0]
    unit = np.zeros_like(columns)
    unit[..., rows, np.arange(slacks.size)] = 1.0
    if not np.array_equal(columns, unit):
        raise ValueError("a slack column of the standard form is not a unit column")
    return rows


def user_coefficients(theta_std: np.ndarray, problem: InverseProblem) -> tuple[np.ndarray, list[str]] | None:
    """Theta by the user's variables (rows) and features (columns), with the rows' names; None
    when the slacks' costs cannot be folded into one Theta (inequality rows whose coefficients
    differ between observations: the fold would differ per observation).

    Args:
        theta_std: (n', d) the fitted model's Theta on the standard-form columns (`model.coef_`),
            in the user's feature units.
        problem: the validated problem it was fitted on (its standard form and its map).
    """
    D = problem.std_map.D  # (n, n'), shared by every observation
    A = problem.lp.A  # (m, n') or (T, m, n')
    theta_std = np.asarray(theta_std, dtype=float)
    slacks = np.flatnonzero(~D.any(axis=0))
    rows = _slack_rows(A, slacks)
    Y = np.zeros((A.shape[-2], theta_std.shape[1]))
    Y[rows] = theta_std[slacks]
    shifts = np.einsum("...mk,md->...kd", A, Y)  # A'Y, per observation when A is
    if shifts.ndim == 3:
        if not np.allclose(shifts, shifts[0], rtol=FOLD_RTOL, atol=0.0):
            return None
        shifts = shifts[0]
    folded = theta_std - shifts
    names = list(problem.decision_names)
    n = len(names)
    sign = D[np.arange(n), np.arange(n)]  # main column j of variable j: +1 shift/free, -1 flip
    theta = sign[:, None] * folded[:n]
    out_rows, out_names = list(theta), list(names)
    for k in np.flatnonzero((D[:, n:] == -1).any(axis=0)) + n:  # x-_j columns of free variables
        j = int(np.flatnonzero(D[:, k])[0])
        negative_side = -folded[k]  # the cost of x_j per unit while x_j < 0
        scale = max(np.abs(theta[j]).max(), np.abs(negative_side).max(), 1e-300)
        if np.abs(negative_side - theta[j]).max() > FOLD_RTOL * scale:
            out_names[j] = f"{names[j]} (x >= 0)"
            out_rows.append(negative_side)
            out_names.append(f"{names[j]} (x < 0)")
    return np.vstack(out_rows), out_names
