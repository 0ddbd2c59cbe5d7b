"""Standard-form conversion against HiGHS (scipy.optimize.linprog) on the original LPs."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from mom_pipeline.inverse.presolve import drop_implied_constraints, implied_constraints
from mom_pipeline.inverse.standard_form import (
    OriginalConstraints,
    StandardFormError,
    convert_samples,
    to_standard_form,
    to_standard_form_batch,
)
from mom_pipeline.lp import solve_lp_batch

BOUND_KINDS = ("boxed", "fixed", "lower", "upper", "free")


@st.composite
def inequality_lps(draw):
    """A feasible bounded LP in inequality form with small integer data.

    x0 is feasible by construction; every side of a variable without a finite bound gets an
    inequality row x_j <= x0_j + 4 or -x_j <= -x0_j + 4 so that the LP is bounded; some
    equality rows are integer combinations of others (dependent, consistent).
    """
    n = draw(st.integers(1, 5))
    kinds = draw(st.lists(st.sampled_from(BOUND_KINDS), min_size=n, max_size=n))
    m_ub = draw(st.integers(0, 3))
    m_eq = draw(st.integers(0, 3))
    n_dependent = draw(st.integers(0, 2)) if m_eq else 0
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x0 = rng.integers(-3, 4, n).astype(float)
    below, above = rng.integers(0, 3, n), rng.integers(0, 3, n)
    below[np.isin(kinds, ["fixed"])] = above[np.isin(kinds, ["fixed"])] = 0
    lower = np.where(np.isin(kinds, ["boxed", "fixed", "lower"]), x0 - below, -np.inf)
    upper = np.where(np.isin(kinds, ["boxed", "fixed", "upper"]), x0 + above, np.inf)
    rows = [rng.integers(-3, 4, n).astype(float) for _ in range(m_ub)]
    rhs = [row @ x0 + rng.integers(0, 3) for row in rows]
    for j in range(n):
        for sign, bound in ((1.0, upper[j]), (-1.0, lower[j])):
            if not np.isfinite(bound):
                rows.append(sign * np.eye(n)[j])
                rhs.append(sign * x0[j] + 4.0)
    A_ub, b_ub = (np.array(rows), np.array(rhs)) if rows else (None, None)
    A_eq = rng.integers(-3, 4, (m_eq, n)).astype(float)
    if n_dependent:
        A_eq = np.vstack([A_eq, rng.integers(-2, 3, (n_dependent, m_eq)) @ A_eq])
    b_eq = A_eq @ x0
    c = rng.integers(-5, 6, n).astype(float)
    return dict(A_ub=A_ub, b_ub=b_ub, A_eq=A_eq if len(A_eq) else None, b_eq=b_eq if len(A_eq) else None,
                lower=lower, upper=upper), c


def _linprog(lp, c):
    return linprog(c, A_ub=lp["A_ub"], b_ub=lp["b_ub"], A_eq=lp["A_eq"], b_eq=lp["b_eq"],
                   bounds=list(zip(lp["lower"], lp["upper"])), method="highs")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inequality_lps())
def test_standard_form_has_the_same_optimum_as_the_original(case):
    lp, c = case
    reference = _linprog(lp, c)
    assert reference.status == 0  # feasible and bounded by construction
    A, b, std_map = to_standard_form(**lp)
    m_eq = 0 if lp["A_eq"] is None else np.linalg.matrix_rank(lp["A_eq"])
    m_ub = 0 if lp["A_ub"] is None else len(lp["A_ub"])
    n_boxed = int(np.sum(np.isfinite(lp["lower"]) & np.isfinite(lp["upper"])))
    assert A.shape[0] == m_eq + m_ub + n_boxed == np.linalg.matrix_rank(A)  # dependent rows dropped

    solution = solve_lp_batch(A, b, std_map.cost_to_standard(c))
    value = solution.objective[0] + std_map.objective_constant(c)[0]
    assert value == pytest.approx(reference.fun, abs=1e-7 * (1 + abs(reference.fun)))

    x = std_map.to_original(solution.x)[0]
    tol = 1e-7
    if lp["A_ub"] is not None:
        assert np.all(lp["A_ub"] @ x <= lp["b_ub"] + tol)
    if lp["A_eq"] is not None:
        np.testing.assert_allclose(lp["A_eq"] @ x, lp["b_eq"], atol=tol)
    assert np.all(x >= lp["lower"] - tol) and np.all(x <= lp["upper"] + tol)
    assert c @ x == pytest.approx(reference.fun, abs=1e-7 * (1 + abs(reference.fun)))
    # A vertex of the standard form is recovered from its original variables alone.
    np.testing.assert_allclose(std_map.to_standard(x[None]), solution.x, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(inequality_lps(), st.integers(2, 4))
def test_batch_of_per_sample_rhs_matches_single_conversions(case, T):
    """Per-sample right-hand sides and bounds (shifted copies): one shared A, and each sample's
    (b, map) equals its own single conversion; the shared fast path equals sample 0's."""
    lp, c = case
    shifts = np.arange(T, dtype=float)[:, None]
    per_sample = dict(lp)
    for name in ("lower", "upper"):
        per_sample[name] = lp[name] + shifts
    for A_name, b_name in (("A_ub", "b_ub"), ("A_eq", "b_eq")):
        A = lp[A_name] if lp[A_name] is not None else np.zeros((0, len(lp["lower"])))
        b = lp[b_name] if lp[b_name] is not None else np.zeros(0)
        per_sample[A_name], per_sample[b_name] = A, b + shifts * A.sum(axis=1)  # x0 + shift stays feasible
    constraints = OriginalConstraints(**per_sample, n_samples=T)
    A, b, std_map = to_standard_form_batch(constraints)
    assert A.ndim == 2  # only b differs: A stays shared
    X_std = []
    for t in range(T):
        A_t, b_t, map_t = to_standard_form(**constraints.of(t))
        np.testing.assert_array_equal(A, A_t)
        np.testing.assert_allclose(b[t] if b.ndim == 2 else b, b_t)
        X_std.append(solve_lp_batch(A_t, b_t, map_t.cost_to_standard(c)).x[0])
    X_std = np.array(X_std)
    X = std_map.to_original(X_std)
    np.testing.assert_allclose(std_map.to_standard(X), X_std, atol=1e-9)
    shared = OriginalConstraints(**constraints.subset([0]).of(0))
    A0, b0, _ = to_standard_form_batch(shared)
    np.testing.assert_array_equal(A0, A)


def test_inconsistent_equalities_raise_naming_the_row():
    with pytest.raises(StandardFormError, match="inconsistent: eq row 1"):
        to_standard_form(A_eq=[[1.0, 1.0], [2.0, 2.0]], b_eq=[1.0, 3.0])
    A, b, std_map = to_standard_form(A_eq=[[1.0, 1.0], [2.0, 2.0]], b_eq=[1.0, 2.0])
    assert A.shape == (1, 2) and std_map.eq_rows_kept.tolist() == [0]


def test_empty_bounds_and_lp_without_rows_raise():
    with pytest.raises(StandardFormError, match="x_1 are empty"):
        to_standard_form(A_ub=[[1.0, 1.0]], b_ub=[1.0], lower=[0.0, 2.0], upper=[1.0, 1.0])
    with pytest.raises(StandardFormError, match="no constraint rows"):
        to_standard_form(lower=[0.0, 0.0])


def test_batch_names_the_sample_that_cannot_be_converted():
    A_eq = np.array([[[1.0, 1.0], [2.0, 2.0]]] * 3)
    b_eq = np.array([[1.0, 2.0], [1.0, 3.0], [2.0, 4.0]])
    constraints = OriginalConstraints(A_ub=np.zeros((0, 2)), b_ub=np.zeros(0), A_eq=A_eq, b_eq=b_eq,
                                      lower=np.zeros(2), upper=np.full(2, np.inf), n_samples=3)
    with pytest.raises(StandardFormError, match="sample 1: .*inconsistent"):
        to_standard_form_batch(constraints)
    A, b, std_map, kept, failures = convert_samples(constraints)
    assert kept.tolist() == [0, 2] and list(failures) == [1]
    np.testing.assert_allclose(b, [[1.0], [2.0]])


def test_costs_and_constant_of_shifted_and_flipped_variables():
    """x_0 in [2, 5] (shift + bound slack), x_1 <= 3 (flip), x_2 free (split): c'x equals
    (c D)'x' + c'offset for x = to_original(x')."""
    A, b, std_map = to_standard_form(A_ub=[[1.0, 1.0, 1.0]], b_ub=[10.0], lower=[2.0, -np.inf, -np.inf],
                                     upper=[5.0, 3.0, np.inf])
    assert std_map.column_names == ("x_0 - lower_0", "upper_1 - x_1", "x+_2", "x-_2", "slack_ub_0",
                                    "upper_0 - x_0 (bound slack)")
    x = np.array([[3.0, -1.0, -2.5]])
    x_std = std_map.to_standard(x)
    np.testing.assert_allclose(x_std, [[1.0, 4.0, 0.0, 2.5, 10.5, 2.0]])
    np.testing.assert_allclose(A @ x_std[0], b)
    c = np.array([[1.0, 2.0, -3.0]])
    assert (std_map.cost_to_standard(c) @ x_std[0] + std_map.objective_constant(c))[0] == pytest.approx(c[0] @ x[0])


def _as_constraints(lp) -> OriginalConstraints:
    n = len(lp["lower"])
    arrays = {}
    for A_name, b_name in (("A_ub", "b_ub"), ("A_eq", "b_eq")):
        arrays[A_name] = lp[A_name] if lp[A_name] is not None else np.zeros((0, n))
        arrays[b_name] = lp[b_name] if lp[b_name] is not None else np.zeros(0)
    return OriginalConstraints(**arrays, lower=lp["lower"], upper=lp["upper"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inequality_lps())
def test_dropping_implied_constraints_keeps_the_optimum(case):
    lp, c = case
    reference = _linprog(lp, c)
    reduced = drop_implied_constraints(_as_constraints(lp))
    A, b, std_map = to_standard_form_batch(reduced)
    assert A.shape[1] <= to_standard_form(**lp)[0].shape[1]
    solution = solve_lp_batch(A, b, std_map.cost_to_standard(c))
    value = solution.objective[0] + std_map.objective_constant(c)[0]
    assert value == pytest.approx(reference.fun, abs=1e-7 * (1 + abs(reference.fun)))
    x = std_map.to_original(solution.x)[0]  # feasible for the constraints as given
    if lp["A_ub"] is not None:
        assert np.all(lp["A_ub"] @ x <= lp["b_ub"] + 1e-7)
    assert np.all(x >= lp["lower"] - 1e-7) and np.all(x <= lp["upper"] + 1e-7)


def test_constraints_implied_only_by_each_other_are_not_both_dropped():
    """x_0 = x_1 with x_0 <= 1 and x_1 <= 1: either bound implies the other, one must stay;
    the row x_0 + x_1 <= 5 is implied by them and goes."""
    rows, bounds = implied_constraints(A_ub=[[1.0, 1.0]], b_ub=[5.0], A_eq=[[1.0, -1.0]], b_eq=[0.0],
                                       lower=[0.0, 0.0], upper=[1.0, 1.0])
    assert rows.tolist() == [True] and bounds.tolist() == [True, False]
    assert implied_constraints(A_ub=[[1.0, 1.0]], b_ub=[-1.0], A_eq=np.zeros((0, 2)), b_eq=np.zeros(0),
                               lower=[0.0, 0.0], upper=[1.0, 1.0]) is None  # infeasible
