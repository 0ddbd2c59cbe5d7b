"""Batched inverses of upper-triangular matrices against LAPACK."""

import numpy as np
import pytest

from mom_pipeline.solvers.triangular import upper_triangular_inverse


@pytest.mark.parametrize("q", [1, 2, 16, 81])
def test_inverse_matches_lapack(q):
    rng = np.random.default_rng(q)
    # Rows scaled over twelve decades, as the block method's R_t are near the optimum.
    R = np.triu(rng.standard_normal((40, q, q))) * 10.0 ** rng.uniform(-6, 6, (40, q, 1))
    R[:, np.arange(q), np.arange(q)] += np.sign(R[:, np.arange(q), np.arange(q)]) * 10.0 ** rng.uniform(-6, 6, (40, q))
    inverse = upper_triangular_inverse(R)
    assert np.array_equal(np.tril(inverse, -1), np.zeros_like(inverse))
    expected = np.linalg.inv(R)
    # Each row of R R^-1 = I to round-off relative to that row's scale.
    scale = np.abs(R).max(axis=2, keepdims=True) * np.abs(inverse).max(axis=1, keepdims=True)
    assert np.all(np.abs(R @ inverse - np.eye(q)) <= 1e-12 * np.maximum(scale, 1.0))
    assert np.allclose(inverse, expected, rtol=1e-8, atol=1e-12 * np.abs(expected).max())


def test_zero_diagonal_raises_as_lapack_does():
    """A singular factor raises what numpy's inv raises, which the block method catches."""
    R = np.triu(np.ones((2, 3, 3)))
    R[1, 1, 1] = 0.0
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.inv(R)
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        upper_triangular_inverse(R)
