"""solve_lp_batch: optimal bases, shared and per-sample constraints, clear errors."""

import numpy as np
import pytest
import scipy.optimize

from mom_pipeline.lp import (
    BasisError,
    LPInputError,
    LPSolveError,
    reduced_cost_operator,
    reduced_costs,
    solve_lp_batch,
)
from mom_pipeline.lp.highs import _structural_basis


def _random_feasible_lp(rng, m, n, T):
    A = rng.normal(size=(T, m, n))
    x0 = rng.uniform(0.1, 1.0, size=(T, n))
    b = np.einsum("tmn,tn->tm", A, x0)
    C = rng.uniform(0.5, 2.0, size=(T, n))  # positive costs and x >= 0: bounded
    return A, b, C


def test_per_sample_constraints_match_scipy():
    rng = np.random.default_rng(0)
    A, b, C = _random_feasible_lp(rng, 4, 9, 50)
    sol = solve_lp_batch(A, b, C)
    for t in range(50):
        ref = scipy.optimize.linprog(C[t], A_eq=A[t], b_eq=b[t], bounds=(0, None), method="highs")
        assert abs(ref.fun - sol.objective[t]) <= 1e-8 * max(1, abs(ref.fun))
    M, _ = reduced_cost_operator(A, sol.basis)
    assert reduced_costs(M, C).min() >= -1e-8
    assert sol.basis.shape == (50, 4)


def test_shared_constraints_with_per_sample_rhs():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(3, 7))
    x0 = rng.uniform(0.1, 1.0, size=(20, 7))
    b = x0 @ A.T
    C = rng.uniform(0.5, 2.0, size=(20, 7))
    sol = solve_lp_batch(A, b, C)
    np.testing.assert_allclose(np.einsum("mn,tn->tm", A, sol.x), b, atol=1e-9)


def test_infeasible_sample_is_named():
    A = np.array([[1.0, 1.0]])
    b = np.array([[1.0], [-1.0], [2.0]])  # sample 1: x1 + x2 = -1 with x >= 0 is infeasible
    C = np.ones((3, 2))
    with pytest.raises(LPSolveError, match="sample 1") as info:
        solve_lp_batch(A, b, C)
    assert info.value.sample == 1 and "nfeasible" in info.value.status


def test_unbounded_sample_is_named():
    A = np.array([[1.0, -1.0]])
    b = np.array([0.0])
    C = np.array([[1.0, 1.0], [1.0, 1.0], [-1.0, 0.0]])
    with pytest.raises(LPSolveError, match="sample 2"):
        solve_lp_batch(A, b, C)


@pytest.mark.parametrize(
    "A, b, C, message",
    [
        (np.ones((2, 3)), np.ones(3), np.ones((1, 3)), "b has 3 entries"),
        (np.ones((2, 3)), np.ones(2), np.ones((1, 4)), "C must be"),
        (np.ones((4, 3)), np.ones(4), np.ones((1, 3)), "more rows than columns"),
        (np.array([[1.0, np.nan]]), np.ones(1), np.ones((1, 2)), "non-finite"),
        (np.array([[1.0, 1.0]]), np.ones(1), np.array([[1.0, 1.0], [np.inf, 1.0]]), "sample 1"),
        (np.ones((2, 3)), np.ones(2), np.ones((1, 3)), "rank"),
        (np.ones((2, 2, 3)), np.ones((3, 2)), np.ones((2, 3)), "inconsistent"),
    ],
)
def test_bad_input_errors(A, b, C, message):
    with pytest.raises(LPInputError, match=message):
        solve_lp_batch(A, b, C)


def test_structural_basis_pivot_keeps_dual_feasibility():
    """A logical that leaves the basis is replaced without losing optimality."""
    rng = np.random.default_rng(3)
    for _ in range(50):
        A = rng.normal(size=(3, 6))
        c = rng.uniform(0.5, 2.0, size=6)
        # start from the all-logical basis (y = 0, reduced costs c >= 0: dual feasible)
        cols = _structural_basis(A, c, np.array([], dtype=int), np.arange(3))
        assert len(cols) == 3 and np.linalg.matrix_rank(A[:, cols]) == 3
        M, _ = reduced_cost_operator(A, cols[None])
        assert reduced_costs(M, c[None]).min() >= -1e-9


def test_singular_basis_is_named():
    A = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 1.0]])
    basis = np.array([[0, 2], [0, 1]])
    with pytest.raises(BasisError, match="sample 1.*singular"):
        reduced_cost_operator(A, basis)
