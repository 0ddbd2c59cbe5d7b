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

The loss is invariant to the scale of c_hat, so Theta cannot start at 0: it starts from a
seeded uniform draw in +-1/sqrt(d) (the default initialization of a linear layer, as PyEPO's
models start). Training is the shared mini-batch Adam of `dfl._DecisionFocusedModel`.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import scipy.linalg
from scipy.optimize import nnls

from ..lp import StandardFormLP
from .base import estimator_hyperparameters
from .dfl import _DecisionFocusedModel
from .mom_problem import support_mask

# Below this norm a prediction or its projection is zero: the cosine is undefined there, and
# the loss and gradient are taken as 0 (the gradient of the cosine with a clamped norm).
ZERO_NORM = 1e-12


class OptimalityCones:
    """The optimality cones K(x*_t) of T observed solutions, prepared for repeated projections:
    an orthonormal basis Q of null(A) (one, or one per sample), and per sample the rows of Q
    of the entries where x*_t is zero (`mom_problem.support_mask`)."""

    def __init__(self, X_star, lp: StandardFormLP):
        X_star = np.asarray(X_star, dtype=float)
        self.shared = lp.A.ndim == 2
        self.null = [scipy.linalg.null_space(lp.A)] if self.shared else [scipy.linalg.null_space(a) for a in lp.A]
        zero = ~support_mask(X_star)
        self.generators = [self._null_of(t)[zero[t]].T for t in range(len(X_star))]  # (r, |zeros|) each

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


def cave_loss(C_hat, cones: OptimalityCones, samples) -> tuple[np.ndarray, np.ndarray]:
    """CaVE's losses -cos(c_hat_t, P_K(c_hat_t)) (T,) and their gradients w.r.t. c_hat (T, n)
    for the rows of C_hat and the cones of `samples` (see the module docstring)."""
    C_hat = np.asarray(C_hat, dtype=float)
    P = cones.project(C_hat, samples)
    norm_c = np.linalg.norm(C_hat, axis=1)
    norm_p = np.linalg.norm(P, axis=1)
    ok = (norm_c > ZERO_NORM) & (norm_p > ZERO_NORM)
    safe_c, safe_p = np.where(ok, norm_c, 1.0), np.where(ok, norm_p, 1.0)
    loss = np.where(ok, -np.einsum("tj,tj->t", C_hat, P) / (safe_c * safe_p), 0.0)
    grad = -P / (safe_p * safe_c)[:, None] + (safe_p / safe_c**3)[:, None] * C_hat
    return loss, np.where(ok[:, None], grad, 0.0)


@estimator_hyperparameters
class CaVE(_DecisionFocusedModel):
    """Linear c_hat = Theta z trained from x* alone on the cone-aligned cosine loss (Tang and
    Khalil, CPAIOR 2024): the batch mean of -cos(c_hat, P_K(x*)(c_hat)) plus (lam/2)||Theta||^2,
    by Adam from a seeded uniform start (see `cave`'s docstring).

    Attributes:
        coef_: (n, d) Theta.  loss_history_: the mean loss of each batch before its step.
        n_steps_: the number of Adam steps (one projection per sample of the batch each).
    """

    needs_costs: ClassVar[bool] = False

    @classmethod
    def _training_state(cls, models, X_star, lp: StandardFormLP) -> OptimalityCones:
        return OptimalityCones(X_star, lp)

    @staticmethod
    def _initial_coefs(models, rng, n: int, d: int) -> np.ndarray:
        # one draw per group: every model of a lockstep grid starts where its own fit would
        start = rng.uniform(-1.0, 1.0, (n, d)) / np.sqrt(d)
        return np.repeat(start[None], len(models), axis=0)

    @staticmethod
    def _stacked_loss(models, C_hat, C, X_star, lp, rng, samples, state):
        return cave_loss(C_hat, state, samples)
