"""The shared finite-batch validator (mom_pipeline.checks)."""

import numpy as np
import pytest

from mom_pipeline.checks import check_finite, finite_samples
from mom_pipeline.lp import LPInputError


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_names_the_first_bad_sample_and_column(bad):
    values = np.ones((5, 3))
    values[3, 2] = bad
    values[4, 0] = np.nan
    with pytest.raises(ValueError, match=r"^C: sample 3 has a non-finite \(NaN or infinite\) entry .* in column 2$"):
        finite_samples("C", values)


def test_shapes_counts_and_error_type():
    assert finite_samples("C", [1.0, 2.0], one_sample_as_row=True).shape == (1, 2)
    with pytest.raises(LPInputError, match=r"C must be \(T, 3\); got shape \(2, 2\)"):
        finite_samples("C", np.ones((2, 2)), n_columns=3, error=LPInputError)
    with pytest.raises(ValueError, match=r"X must be \(4, n\) like C; got shape \(2, 2\)"):
        finite_samples("X", np.ones((2, 2)), n_samples=4, shape_hint=" like C")
    with pytest.raises(ValueError, match="0 samples; at least 1"):
        finite_samples("Z", np.ones((0, 2)), min_samples=1)
    with pytest.raises(ValueError, match="numeric array"):
        finite_samples("Z", [["a", "b"]])
    A = np.ones((2, 3, 4))
    A[1, 2, 0] = np.inf
    with pytest.raises(LPInputError, match=r"A: sample 1 .* at index \(2, 0\)"):
        check_finite("A", A, per_sample=True, error=LPInputError)
