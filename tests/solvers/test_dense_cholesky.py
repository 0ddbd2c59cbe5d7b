"""The copy-free Cholesky factorization of the solvers against scipy's (the independent reference)."""

import numpy as np
import pytest
import scipy.linalg

from mom_pipeline.solvers.dense_cholesky import cho_factor_gram, cho_factor_symmetric, cho_solve_factor


def _spd(k: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((k, k + 3))
    return A @ A.T + 1e-3 * np.eye(k)


@pytest.mark.parametrize("lower", [True, False])  # L L' (the default) and R'R
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_solves_equal_scipy_and_leave_the_matrix_intact(layout, lower):
    big = _spd(90, seed=1)
    matrix = {"C": np.ascontiguousarray(big), "F": np.asfortranarray(big), "strided": big[::2, ::2]}[layout]
    before = matrix.copy()
    rhs = np.random.default_rng(2).standard_normal((matrix.shape[0], 3))
    factor = cho_factor_symmetric(matrix, lower=lower)
    assert factor[1] is lower
    ours = cho_solve_factor(factor, rhs)
    reference = scipy.linalg.cho_solve(scipy.linalg.cho_factor(np.array(matrix)), rhs)
    assert np.allclose(ours, reference, rtol=1e-10, atol=1e-12)
    assert np.allclose(matrix @ ours, rhs, atol=1e-8)
    assert np.array_equal(matrix, before)  # overwrite=False: the caller's matrix is untouched


def test_overwrite_factors_in_place_with_the_same_solution():
    matrix = _spd(60, seed=3)
    rhs = np.ones(60)
    expected = np.linalg.solve(matrix, rhs)
    scratch = matrix.copy()
    assert np.allclose(cho_solve_factor(cho_factor_symmetric(scratch, overwrite=True), rhs), expected, rtol=1e-9)


def test_indefinite_and_non_finite_matrices_raise_linalg_error():
    indefinite = np.diag([1.0, -1.0, 2.0])
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        cho_factor_symmetric(indefinite)
    for bad in (np.nan, np.inf):
        matrix = _spd(20, seed=4)
        matrix[7, 3] = matrix[3, 7] = bad
        with pytest.raises(np.linalg.LinAlgError):
            cho_factor_symmetric(matrix)


@pytest.mark.parametrize("shape", [(300, 40), (25, 60)])  # more rows than columns, and fewer
def test_gram_factor_solves_the_shifted_normal_equations(shape):
    rows = np.random.default_rng(5).standard_normal(shape)
    rhs = np.random.default_rng(6).standard_normal(shape[1])
    expected = np.linalg.solve(rows.T @ rows + 0.3 * np.eye(shape[1]), rhs)
    assert np.allclose(cho_solve_factor(cho_factor_gram(rows, 0.3), rhs), expected, rtol=1e-9, atol=1e-12)
    with pytest.raises(np.linalg.LinAlgError):  # fewer rows than columns and no shift: singular
        cho_factor_gram(rows[: shape[1] // 2], 0.0)


def test_empty_systems_solve_to_empty():
    assert cho_solve_factor(cho_factor_symmetric(np.zeros((0, 0))), np.zeros(0)).shape == (0,)


def test_non_square_input_is_refused():
    with pytest.raises(ValueError, match="square"):
        cho_factor_symmetric(np.ones((3, 4)))
