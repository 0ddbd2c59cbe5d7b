"""The perturbation family of decision-focused learning, on the batched exact oracles.

Each learns c_hat = Theta z by the mini-batch Adam of `dfl._DecisionFocusedModel`. No
deep-learning framework is needed: each method's gradient with respect to c_hat is a closed
form in LP solutions, and the chain rule through c_hat = Theta z is one matrix product. The
definitions follow PyEPO's modules (``perturbedOpt``, ``implicitMLE``, ``adaptiveImplicitMLE``,
``negativeIdentity``, ``perturbationGradient``) and the losses PyEPO trains them with. For the
minimization LP  min c'x, Ax = b, x >= 0,  with x(w) an optimal solution for costs w,
phi(w) = min_x w'x, x* the optimal solution of the true costs c and z* = c'x*:

* `DPO`, the differentiable perturbed optimizer (Berthet, Blondel, Teboul, Cuturi, Vert and
  Bach, "Learning with Differentiable Perturbed Optimizers", NeurIPS 2020): the smoothed
  solution  x_bar(c_hat) = E_xi[x(c_hat + sigma xi)],  xi ~ N(0, I),  trained from x* alone
  on the squared error  L = (1/n) ||x_bar - x*||^2  (PyEPO's ``perturbedOpt`` with MSE). The
  Jacobian of x_bar is E[x(c_hat + sigma xi) xi'] / sigma, so with g = dL/dx_bar =
  (2/n)(x_bar - x*) the gradient is  (1/(M sigma)) sum_m (x_m'g) xi_m  over M draws. The
  M perturbed solves of a batch are ONE batched oracle call (`dfl.perturbed_solutions`, the
  sampling PFYL uses).
* `IMLE`, implicit maximum likelihood estimation (Niepert, Minervini and Franceschi,
  "Implicit MLE: Backpropagating Through Discrete Exponential Family Distributions",
  NeurIPS 2021): perturb-and-MAP with Sum-of-Gamma noise; on the decision loss
  L = c'x_bar - z* (PyEPO's L1 loss of the objective value, >= 0, so dL/dx = c while the
  regret is positive and 0 once it is zero), the gradient is
  mean_m [x(c_hat + sigma xi_m + lam dL/dx) - x(c_hat + sigma xi_m)] / lam  (two-sided:
  the solutions at +lam and -lam over 2 lam). With the noise fixed this is the exact gradient
  of mean_m [phi(c_hat + sigma xi_m + lam c) - phi(c_hat + sigma xi_m)] / lam.
* `AIMLE`, adaptive I-MLE (Minervini, Franceschi and Niepert, "Adaptive Perturbation-Based
  Gradient Estimation for Discrete Latent Variable Models", AAAI 2023): I-MLE with
  lam = alpha ||C_hat|| / ||dL/dX|| over the batch, and alpha adapted after every step as
  PyEPO does: a moving average (0.9, 0.1; from 1) of the share of nonzero gradient entries,
  alpha += ``alpha_step`` while that average is below 1, else alpha -= ``alpha_step``; alpha
  starts at 0, and the gradient is divided by lam + 1e-7 (the first step's is zero). As lam
  scales with ||C_hat||, Theta starts from a seeded linear-layer draw (`dfl.linear_layer_start`,
  as CaVE's), not from 0.
* `NID`, negative identity backpropagation (Sahoo, Paulus, Vlastelica, Musil, Kuleshov and
  Martius, "Backpropagation through Combinatorial Algorithms: Identity with Projection
  Works", ICLR 2023): the solver's Jacobian replaced by -I, so on the decision loss
  c'x(c_hat) - z* the gradient is -dL/dx = -c for a sample whose decision has positive
  regret and 0 otherwise. One oracle call per step; no smoothed loss has this gradient.
* `PG`, the perturbation gradient losses (Huang and Gupta, "Learning Best-in-Class Policies
  for the Predict-then-Optimize Framework", 2024): the decision cost c'x(c_hat) is the
  derivative of phi(c_hat + h c) in h at 0, replaced by a finite difference of width
  ``sigma``: PGB (backward, the default)  [phi(c_hat) - phi(c_hat - sigma c)] / sigma,  PGC
  (``two_sides``, central)  [phi(c_hat + sigma c) - phi(c_hat - sigma c)] / (2 sigma); their
  exact gradients are the same differences of the solutions (`dfl.value_difference_loss`).
  Theta starts from a seeded linear-layer draw (see `PG`).

Every model of a lockstep grid shares its group's draws (batches and noise), so it ends
exactly where its own `fit` would.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..lp import StandardFormLP
from .base import POSITIVE, estimator_hyperparameters
from .dfl import _DecisionFocusedModel, _PerturbedModel, linear_layer_start, perturbed_solutions, value_difference_loss

# AI-MLE's guard against a zero interpolation strength, and its threshold for a nonzero
# gradient entry (PyEPO's constants).
AIMLE_EPS = 1e-7
# The regret of a decision counts as zero below this share of max(1, |z*|).
REGRET_TOL = 1e-9


def sum_of_gamma_noise(rng: np.random.Generator, size: tuple, kappa: float = 5.0, n_iterations: int = 10):
    """Sum-of-Gamma noise (Niepert et al. 2021), I-MLE's perturbation: for every entry,
    [sum_{i=1}^{s} Gamma(shape 1/kappa, scale kappa/i) - log s] / kappa with s = n_iterations."""
    total = np.zeros(size)
    for i in range(1, n_iterations + 1):
        total += rng.gamma(1.0 / kappa, kappa / i, size)
    return (total - np.log(n_iterations)) / kappa


def decision_loss_direction(C, X, X_star) -> tuple[np.ndarray, np.ndarray]:
    """The decision loss L = c'x - z* (T,) of decisions X (or mixtures of them) and its
    gradient in x, dL/dx = c where L > 0 and 0 where the decision is optimal (the derivative
    of PyEPO's L1 loss of the objective value, which is 0 at a zero regret)."""
    optimum = np.einsum("tj,tj->t", C, X_star)
    loss = np.einsum("tj,tj->t", C, X) - optimum
    positive = loss > REGRET_TOL * np.maximum(1.0, np.abs(optimum))
    return loss, np.where(positive[:, None], C, 0.0)


def dpo_loss(C_hat, X_star, lp: StandardFormLP, noise: np.ndarray, sigma) -> tuple[np.ndarray, np.ndarray]:
    """DPO's squared error (1/n)||x_bar - x*||^2 (T,) of the smoothed solutions x_bar = the
    mean over the M fixed draws of x(c_hat + sigma xi), and the perturbed-optimizer gradient
    (1/(M sigma)) sum_m (x_m'g) xi_m with g = (2/n)(x_bar - x*) (T, n). One batched solve."""
    T, n = C_hat.shape
    M = noise.shape[1]
    x, _ = perturbed_solutions(C_hat, lp, noise, sigma)
    gap = x.mean(axis=1) - X_star
    g = 2.0 * gap / n
    sigma = np.broadcast_to(np.asarray(sigma, dtype=float), (T,))
    grad = np.einsum("tm,tmj->tj", np.einsum("tmj,tj->tm", x, g), noise) / (M * sigma)[:, None]
    return np.mean(gap**2, axis=1), grad


def imle_loss(C_hat, C, X_star, lp: StandardFormLP, noise: np.ndarray, sigma, lam_interp,
              two_sides: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """I-MLE's decision loss c'x_bar - z* (T,) of the perturbed-and-MAP mean x_bar and its
    gradient (T, n) (see the module docstring); lam_interp and sigma one or one per sample.
    Two batched solves: the perturbations, then their targets (both sides in one call)."""
    T = C_hat.shape[0]
    x, _ = perturbed_solutions(C_hat, lp, noise, sigma)
    loss, direction = decision_loss_direction(C, x.mean(axis=1), X_star)
    lam = np.broadcast_to(np.asarray(lam_interp, dtype=float), (T,))
    return loss, _imle_gradient(C_hat, x, direction, lp, noise, sigma, lam, two_sides, guard=0.0)


def _imle_gradient(C_hat, x, direction, lp, noise, sigma, lam, two_sides: bool, guard: float) -> np.ndarray:
    """mean_m [x(c_hat + sigma xi_m + lam d) - x(c_hat + sigma xi_m)] / (lam + guard), or the
    two-sided [x(+lam d) - x(-lam d)] / (2 lam + guard); x: (T, M, n) the unshifted solutions."""
    T = C_hat.shape[0]
    shift = lam[:, None] * direction
    if not two_sides:
        target, _ = perturbed_solutions(C_hat, lp, noise, sigma, shift=shift)
        return (target - x).mean(axis=1) / (lam + guard)[:, None]
    both, _ = perturbed_solutions(np.concatenate([C_hat, C_hat]), lp.subset(np.tile(np.arange(T), 2)),
                                  np.concatenate([noise, noise]), np.tile(np.broadcast_to(sigma, (T,)), 2),
                                  shift=np.concatenate([shift, -shift]))
    return (both[:T] - both[T:]).mean(axis=1) / (2 * lam + guard)[:, None]


def nid_loss(C_hat, C, X_star, lp: StandardFormLP) -> tuple[np.ndarray, np.ndarray]:
    """NID: the decision loss c'x(c_hat) - z* (T,) and the negative-identity gradient -dL/dx
    (T, n): -c where the regret is positive, else 0. One batched solve."""
    loss, direction = decision_loss_direction(C, lp.solve(C_hat, need_basis=False).x, X_star)
    return loss, -direction


def pg_loss(C_hat, C, lp: StandardFormLP, sigma, two_sides: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """PG's loss (T,) and exact gradient (T, n): PGB [phi(c_hat) - phi(c_hat - sigma c)] / sigma,
    or with ``two_sides`` PGC [phi(c_hat + sigma c) - phi(c_hat - sigma c)] / (2 sigma)."""
    return value_difference_loss(C_hat, C, lp, sigma, 1.0 if two_sides else 0.0, -1.0)


@estimator_hyperparameters
class DPO(_PerturbedModel):
    """Linear c_hat = Theta z trained from x* alone through the differentiable perturbed
    optimizer (Berthet et al., NeurIPS 2020; PyEPO's ``perturbedOpt`` with the squared error):
    the batch mean of (1/n)||E[x(c_hat + sigma xi)] - x*||^2, Gaussian xi, M =
    ``n_perturbations`` fresh draws per sample and step (see `perturbed`).

    Attributes:
        coef_: (n, d) Theta.  loss_history_: the mean loss of each batch before its step.
        n_steps_: the number of Adam steps (one batched oracle call each).
    """

    needs_costs: ClassVar[bool] = False

    @classmethod
    def _stacked_loss(cls, models, C_hat, C, X_star, lp, rng, samples, state):
        noise, sigmas, _ = cls._stacked_noise(models, rng, C_hat)
        return dpo_loss(C_hat, X_star, lp, noise, sigmas)


@estimator_hyperparameters(keyword_only=True)
class _SumOfGammaModel(_PerturbedModel):
    """I-MLE's perturbation (Sum-of-Gamma noise of ``kappa``, 10 terms) and sides."""

    _parameter_constraints: ClassVar[dict] = {**_PerturbedModel._parameter_constraints,
                                              "kappa": [POSITIVE], "two_sides": ["boolean"]}
    kappa: float = 5.0
    two_sides: bool = False

    def _group_key(self) -> tuple:
        return super()._group_key() + (float(self.kappa), bool(self.two_sides))

    @staticmethod
    def _draw(models, rng, B: int, n: int) -> np.ndarray:
        return sum_of_gamma_noise(rng, (B, int(models[0].n_perturbations), n), float(models[0].kappa))


@estimator_hyperparameters
class IMLE(_SumOfGammaModel):
    """Linear c_hat = Theta z trained by implicit MLE (Niepert et al., NeurIPS 2021; PyEPO's
    ``implicitMLE``) on the decision loss c'x_bar - z*: Sum-of-Gamma noise (``kappa``, 10
    terms) of scale ``sigma``, interpolation strength ``lam_interp``, one- or two-sided
    (``two_sides``).

    Attributes:
        coef_: (n, d) Theta.  loss_history_: the mean decision loss of each batch's x_bar.
        n_steps_: the number of Adam steps (two batched oracle calls each).
    """

    _parameter_constraints: ClassVar[dict] = {**_SumOfGammaModel._parameter_constraints, "lam_interp": [POSITIVE]}
    lam_interp: float = 10.0

    @classmethod
    def _stacked_loss(cls, models, C_hat, C, X_star, lp, rng, samples, state):
        noise, sigmas, B = cls._stacked_noise(models, rng, C_hat)
        lams = np.repeat([float(m.lam_interp) for m in models], B)
        return imle_loss(C_hat, C, X_star, lp, noise, sigmas, lams, bool(models[0].two_sides))


@estimator_hyperparameters
class AIMLE(_SumOfGammaModel):
    """Linear c_hat = Theta z trained by adaptive implicit MLE (Minervini et al., AAAI 2023;
    PyEPO's ``adaptiveImplicitMLE``): I-MLE whose interpolation strength is
    alpha ||C_hat|| / ||dL/dX|| per batch, alpha adapted by ``alpha_step`` towards every
    gradient entry being nonzero (see `perturbed`).

    Attributes:
        as `IMLE`, and alpha_: alpha after the last step.
    """

    _parameter_constraints: ClassVar[dict] = {**_SumOfGammaModel._parameter_constraints, "alpha_step": [POSITIVE]}
    alpha_step: float = 1e-3

    # lam is proportional to ||C_hat||: from Theta = 0 it would stay 0, and so would Theta
    _initial_coefs = staticmethod(linear_layer_start)

    @classmethod
    def _training_state(cls, models, X_star, lp: StandardFormLP) -> dict:
        for model in models:
            model.alpha_ = 0.0
        return {"nonzero_share": np.ones(len(models))}

    @classmethod
    def _stacked_loss(cls, models, C_hat, C, X_star, lp, rng, samples, state):
        noise, sigmas, B = cls._stacked_noise(models, rng, C_hat)
        x, _ = perturbed_solutions(C_hat, lp, noise, sigmas)
        loss, direction = decision_loss_direction(C, x.mean(axis=1), X_star)
        lams = np.zeros(len(models))
        for i, model in enumerate(models):
            rows = slice(i * B, (i + 1) * B)
            norm = np.linalg.norm(direction[rows])
            lams[i] = model.alpha_ * np.linalg.norm(C_hat[rows]) / norm if norm > 0 else 0.0
        grad = _imle_gradient(C_hat, x, direction, lp, noise, sigmas, np.repeat(lams, B),
                              bool(models[0].two_sides), guard=AIMLE_EPS)
        share = state["nonzero_share"]
        for i, model in enumerate(models):
            nonzero = np.mean(np.abs(grad[i * B:(i + 1) * B]) > AIMLE_EPS)
            share[i] = 0.9 * share[i] + 0.1 * nonzero
            model.alpha_ += model.alpha_step if share[i] < 1 else -model.alpha_step
        return loss, grad


@estimator_hyperparameters
class NID(_DecisionFocusedModel):
    """Linear c_hat = Theta z trained by negative identity backpropagation (Sahoo et al.,
    ICLR 2023; PyEPO's ``negativeIdentity``) on the decision loss c'x(c_hat) - z*: the
    gradient in c_hat is -c for every sample whose decision has positive regret.

    Attributes:
        coef_: (n, d) Theta.  loss_history_: the mean regret of each batch before its step.
        n_steps_: the number of Adam steps (one batched oracle call each).
    """

    @staticmethod
    def _stacked_loss(models, C_hat, C, X_star, lp, rng, samples, state):
        return nid_loss(C_hat, C, X_star, lp)


@estimator_hyperparameters
class PG(_DecisionFocusedModel):
    """Linear c_hat = Theta z trained on the perturbation gradient loss (Huang and Gupta, 2024;
    PyEPO's ``perturbationGradient``): PGB, or PGC with ``two_sides``, of width ``sigma``.

    Attributes:
        coef_: (n, d) Theta.  loss_history_: the mean PG loss of each batch before its step.
        n_steps_: the number of Adam steps (one batched call of two solves each).
    """

    _parameter_constraints: ClassVar[dict] = {**_DecisionFocusedModel._parameter_constraints,
                                              "sigma": [POSITIVE], "two_sides": ["boolean"]}
    sigma: float = 0.1
    two_sides: bool = False

    # From Theta = 0 a problem whose zero-cost decision is also optimal for -c (the knapsack:
    # take nothing) has x(c_hat) = x(c_hat - sigma c) and a zero gradient for good; PyEPO's
    # models start from a linear layer's draw, and so does PG here.
    _initial_coefs = staticmethod(linear_layer_start)

    def _group_key(self) -> tuple:
        return super()._group_key() + (bool(self.two_sides),)

    @staticmethod
    def _stacked_loss(models, C_hat, C, X_star, lp, rng, samples, state):
        B = C_hat.shape[0] // len(models)
        return pg_loss(C_hat, C, lp, np.repeat([float(m.sigma) for m in models], B), bool(models[0].two_sides))
