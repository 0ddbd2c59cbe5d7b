"""Generic QP solvers (the ground floor: no project imports).

* `hinge_working_set.solve_working_set`: exact L2-regularized hinge QP over rows given by an
  operator (MOM's training problem), with its warm start (`hinge_newton`);
* `block_hinge_ipm.block_hinge_qp`: exact hinge QP whose blocks share coefficients and have
  free local variables (MOM's dual formulation), by Newton steps that eliminate block by block;
* `hinge_path.solve_hinge_path`: the hinge QP over a path of regularization constants;
* `interior_point`: dense primal-dual interior-point methods for a box QP and a hinge QP;
* `dense_cholesky`: their Cholesky factorizations of row-major symmetric matrices, without copies;
* `clarabel_qp.solve_clarabel`: the mature conic solver with retries and a clear error;
* `policy`: which of these a problem of a given shape goes to, with the thresholds.
"""

from .block_hinge_ipm import block_hinge_qp
from .clarabel_qp import ball_block, solve_clarabel
from .hinge_path import solve_hinge_path
from .hinge_rows import HingeRowOperator
from .hinge_working_set import solve_working_set
from .interior_point import box_qp, hinge_qp_ipm
from .policy import block_ipm_fits, newton_system, path_warm_start, restricted_qp_method

__all__ = ["HingeRowOperator", "ball_block", "block_hinge_qp", "block_ipm_fits", "box_qp", "hinge_qp_ipm",
           "newton_system", "path_warm_start", "restricted_qp_method", "solve_clarabel", "solve_hinge_path",
           "solve_working_set"]
