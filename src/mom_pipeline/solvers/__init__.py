"""Generic QP solvers (the ground floor: no project imports).

* `hinge_working_set.solve_working_set`: exact L2-regularized hinge QP over rows given by an
  operator (MOM's training problem), with its warm start (`hinge_newton`);
* `hinge_path.solve_hinge_path`: the same QP over a path of regularization constants;
* `interior_point`: dense primal-dual interior-point methods for a box QP and a hinge QP;
* `clarabel_qp.solve_clarabel`: the mature conic solver with retries and a clear error;
* `policy`: which of these a problem of a given shape goes to, with the thresholds.
"""

from .clarabel_qp import ball_block, solve_clarabel
from .hinge_path import solve_hinge_path
from .hinge_working_set import HingeRowOperator, solve_working_set
from .interior_point import box_qp, hinge_qp_ipm
from .policy import newton_system, path_warm_start, restricted_qp_method

__all__ = ["HingeRowOperator", "ball_block", "box_qp", "hinge_qp_ipm", "newton_system", "path_warm_start",
           "restricted_qp_method", "solve_clarabel", "solve_hinge_path", "solve_working_set"]
