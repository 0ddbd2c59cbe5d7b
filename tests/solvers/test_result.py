"""The solvers' one result type: its status check and the flat diagnostics estimators keep."""

import numpy as np
import pytest

from mom_pipeline.solvers.result import SolverResult


def test_info_flattens_certificate_and_scalar_extras_but_not_arrays():
    result = SolverResult(np.ones(3), objective=2.5, iterations=7, path="cold",
                          certificate={"kkt_residual": 1e-12},
                          extra={"working_set": np.int64(4), "multipliers": np.zeros(3)})
    info = result.info()
    assert info == {"iterations": 7, "path": "cold", "status": "optimal", "objective": 2.5,
                    "kkt_residual": 1e-12, "working_set": 4}
    assert result.success


def test_objective_left_out_when_not_computed():
    assert "objective" not in SolverResult(np.ones(1)).info()


def test_unknown_status_is_refused_by_name():
    with pytest.raises(ValueError, match="'stalled'"):
        SolverResult(np.ones(1), status="stalled")
