"""CaVE, cone-aligned vector estimation (Tang and Khalil, "CaVE: A Cone-Aligned Approach for Fast
Predict-then-optimize with Binary Linear Programs", CPAIOR 2024; PyEPO's ``coneAlignedCosine``).

Like MOM from x* alone, CaVE learns from the observed decisions, never from the costs. For the
standard-form LP  min c'x, Ax = b, x >= 0,  x* is optimal for c exactly when c lies in the
optimality cone of x* (the cone of the normals of the constraints binding at x*):

    K(x*) = { A'y + sum_{j : x*_j = 0} s_j e_j :  y free, s >= 0 }.

CaVE aligns c_hat with that cone: its loss is the negative cosine between c_hat and its
Euclidean projection p = P_K(c_hat),

    L(c_hat) = -c_hat'p / (||c_hat|| ||p||) = -||p|| / ||c_hat||,

(c_hat'p = ||p||^2 for the projection onto a closed convex cone, Moreau), which is -1 exactly
when x* is optimal for c_hat. Its gradient is closed-form: (1/2)||P_K c||^2 has gradient
P_K c, so

    dL/dc_hat = -p / (||p|| ||c_hat||) + ||p|| c_hat / ||c_hat||^3,

the same as differentiating the cosine with p held fixed (as PyEPO does). The projection is a
small nonnegative least squares per sample: with Q an orthonormal basis of null(A), the part
of c_hat in A's row space is in the cone already, and the rest is
min_{s >= 0} ||Q'c_hat - Q'E s||^2 over the unit vectors e_j of the zero entries of x*
(16 rows and 32 columns on the 5x5 shortest path), solved by `scipy.optimize.nnls`.

CaVE+ and CaVE hybrid (the same paper) align c_hat with a target strictly inside the cone,
which keeps predictions off its boundary: for a prediction outside its cone the target is
(1 - a) p/||p|| + a centre, where the centre is the mean of the cone's unit binding normals (the
rows of A in both signs, which cancel, and the e_j of the zero entries of x*; PyEPO's binary
models also count their x <= 1 bounds, so their centre differs) and a = ``inner_ratio``. The
hybrid projects at a step only with probability ``solve_ratio`` and otherwise aligns with
(1 - a) c_hat/||c_hat|| + a centre. Their gradients hold the target fixed, as PyEPO's do.

The loss is invariant to the scale of c_hat, so Theta cannot start at 0: it starts from a
seeded uniform draw in +-1/sqrt(d) (the default initialization of a linear layer, as PyEPO's
models start). Training is the shared mini-batch Adam of `dfl._DecisionFocusedModel`.
"""

from __future__ import annotations

from numbers import Real
from typing import ClassVar

import numpy as np
import scipy.linalg
from scipy.optimize import nnls
from sklearn.utils._param_validation import Interval

from ..lp import StandardFormLP
from .base import estimator_hyperparameters
from .dfl import _DecisionFocusedModel, linear_layer_start
from .mom_problem import support_mask

# Below this norm a prediction or its projection is zero: the cosine is undefined there, and
# the loss and gradient are taken as 0 (the gradient of the cosine with a clamped norm).
ZERO_NORM = 1e-12
# CaVE+ leaves a prediction whose distance to its cone is below this share of its norm at its
# projection (it is inside), and pushes the others' targets towards the cone's centre.
INSIDE_TOL = 1e-7


class OptimalityCones:
    """The optimality cones K(x*_t) of T observed solutions, prepared for repeated projections:
    an orthonormal basis Q of null(A) (one, or one per sample), per sample the rows of Q of
    the entries where x*_t is zero (`mom_problem.support_mask`), and each cone's centre: the
    mean of its unit binding normals (the rows of A in both signs, which cancel, and the e_j
    of the zero entries), the direction CaVE+ pushes its targets towards."""

    def __init__(self, X_star, lp: StandardFormLP):
        X_star = np.asarray(X_star, dtype=float)
        self.shared = lp.A.ndim == 2
        self.null = [scipy.linalg.null_space(lp.A)] if self.shared else [scipy.linalg.null_space(a) for a in lp.A]
        zero = ~support_mask(X_star)
        self.generators = [self._null_of(t)[zero[t]].T for t in range(len(X_star))]  # (r, |zeros|) each
        self.centres = zero / (2 * lp.A.shape[-2] + zero.sum(axis=1, keepdims=True))

    def _null_of(self, t: int) -> np.ndarray:
        return self.null[0 if self.shared else t]

    def project(self, C_hat, samples) -> np.ndarray:
        """(len(samples), n) projections of the rows of C_hat onto the cones of `samples`."""
        C_hat = np.asarray(C_hat, dtype=float)
        P = np.empty_like(C_hat)
        for i, t in enumerate(samples):
            Q = self._null_of(t)
            q = C_hat[i] @ Q
            G = self.generators[t]
            residual = q - G @ nnls(G, q)[0] if G.shape[1] else q
            P[i] = C_hat[i] - Q @ residual
        return P


def cosine_loss(C_hat, targets, projections=False) -> tuple[np.ndarray, np.ndarray]:
    """-cos(c_hat_t, target_t) (T,) and its gradient w.r.t. c_hat with the targets held fixed
    (T, n): -t / (||t|| ||c_hat||) + (c_hat't) c_hat / (||t|| ||c_hat||^3). Where
    ``projections`` (one flag, or one per row) the targets are the exact projections onto the
    cones, so c_hat't = ||t||^2 (Moreau) is used as such. A zero c_hat or target gives loss and
    gradient 0."""
    C_hat, targets = np.asarray(C_hat, dtype=float), np.asarray(targets, dtype=float)
    norm_c, norm_t = np.linalg.norm(C_hat, axis=1), np.linalg.norm(targets, axis=1)
    ok = (norm_c > ZERO_NORM) & (norm_t > ZERO_NORM)
    safe_c, safe_t = np.where(ok, norm_c, 1.0), np.where(ok, norm_t, 1.0)
    aligned = np.einsum("tj,tj->t", C_hat, targets)
    loss = np.where(ok, -aligned / (safe_c * safe_t), 0.0)
    along = np.where(projections, safe_t, aligned / safe_t)
    grad = -targets / (safe_t * safe_c)[:, None] + (along / safe_c**3)[:, None] * C_hat
    return loss, np.where(ok[:, None], grad, 0.0)


def cave_targets(C_hat, cones: OptimalityCones, samples, inner_ratio=0.0, project: bool = True) -> np.ndarray:
    """The targets the cosine aligns c_hat with (see the module docstring): the projection p
    onto the cone (CaVE, inner_ratio 0); (1 - a) p/||p|| + a centre for a prediction outside
    its cone (CaVE+, a = inner_ratio; a prediction inside keeps p = c_hat); without
    ``project`` (CaVE hybrid's cheap steps) (1 - a) c_hat/||c_hat|| + a centre, no projection."""
    C_hat = np.asarray(C_hat, dtype=float)
    inner = np.broadcast_to(np.asarray(inner_ratio, dtype=float), (len(C_hat),))[:, None]
    centres = cones.centres[np.asarray(samples)]
    if not project:
        return (1 - inner) * _unit(C_hat) + inner * centres
    P = cones.project(C_hat, samples)
    inside = np.linalg.norm(C_hat - P, axis=1) <= INSIDE_TOL * np.linalg.norm(C_hat, axis=1)
    pushed = np.where(inside[:, None], _unit(P), (1 - inner) * _unit(P) + inner * centres)
    return np.where(inner == 0, P, pushed)  # row by row: a grid's cells do not change each other's bits


def _unit(V: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(V, axis=1, keepdims=True)
    return V / np.where(norms > ZERO_NORM, norms, 1.0)


def cave_loss(C_hat, cones: OptimalityCones, samples, inner_ratio=0.0, project: bool = True):
    """CaVE's losses -cos(c_hat_t, target_t) (T,) and their gradients w.r.t. c_hat (T, n), the
    targets (`cave_targets`) held fixed; for CaVE (inner_ratio 0) this is the exact gradient
    of -||P_K c_hat|| / ||c_hat||."""
    exact = project & (np.broadcast_to(np.asarray(inner_ratio, dtype=float), (len(C_hat),)) == 0)
    return cosine_loss(C_hat, cave_targets(C_hat, cones, samples, inner_ratio, project), projections=exact)


@estimator_hyperparameters
class CaVE(_DecisionFocusedModel):
    """Linear c_hat = Theta z trained from x* alone on the cone-aligned cosine loss (Tang and
    Khalil, CPAIOR 2024): the batch mean of -cos(c_hat, target) plus (lam/2)||Theta||^2, by Adam
    from a seeded uniform start (see `cave`'s docstring).

    CaVE (the defaults) aligns with the exact projection onto the optimality cone. CaVE+
    (``inner_ratio`` a > 0) aligns a prediction outside its cone with (1 - a) p/||p|| + a
    centre, a target strictly inside the cone (the paper's push inside, on the NNLS
    projection; its other form, a truncated interior-point solve, is not implemented). CaVE
    hybrid (``solve_ratio`` < 1 as well) projects at a step with probability solve_ratio and
    otherwise aligns with (1 - a) c_hat/||c_hat|| + a centre, with no projection.

    Attributes:
        coef_: (n, d) Theta.  loss_history_: the mean loss of each batch before its step.
        n_steps_: the number of Adam steps.  n_projected_steps_: the steps that projected.
    """

    needs_costs: ClassVar[bool] = False
    _parameter_constraints: ClassVar[dict] = {**_DecisionFocusedModel._parameter_constraints,
                                              "inner_ratio": [Interval(Real, 0, 1, closed="both")],
                                              "solve_ratio": [Interval(Real, 0, 1, closed="both")]}
    inner_ratio: float = 0.0
    solve_ratio: float = 1.0

    def _group_key(self) -> tuple:
        # the draw that decides whether a step projects is shared by the group
        return super()._group_key() + (float(self.solve_ratio),)

    @classmethod
    def _training_state(cls, models, X_star, lp: StandardFormLP) -> OptimalityCones:
        for model in models:
            model.n_projected_steps_ = 0
        return OptimalityCones(X_star, lp)

    _initial_coefs = staticmethod(linear_layer_start)

    @staticmethod
    def _stacked_loss(models, C_hat, C, X_star, lp, rng, samples, state):
        solve_ratio = float(models[0].solve_ratio)
        # drawn only by the hybrid: CaVE and CaVE+ use the batches' random stream alone
        project = solve_ratio >= 1 or rng.random() < solve_ratio
        B = C_hat.shape[0] // len(models)
        for model in models:
            model.n_projected_steps_ += int(project)
        return cave_loss(C_hat, state, samples, np.repeat([float(m.inner_ratio) for m in models], B), project)
