"""Decision-focused learning baselines on the batched exact oracles (no autodiff framework).

They learn a linear cost model c_hat = Theta z from features and TRUE costs (``needs_costs``)
by mini-batch Adam on a surrogate whose gradient with respect to c_hat needs only LP solves:

* `PFYL`, the perturbed Fenchel-Young loss (Berthet et al., 2020). For a minimization LP
  with perturbed value  F(c_hat) = E_xi[ min_x (c_hat + sigma xi)'x ],  xi ~ N(0, I), the
  loss  L(c_hat; x*) = c_hat'x* - F(c_hat)  is convex, >= 0, and has gradient
  x* - E_xi[ x*(c_hat + sigma xi) ]. The expectation is the mean over M draws, and the M
  perturbations of every sample of a batch are ONE batched oracle call.
* `SPOPlusAdam`, the SPO+ surrogate (Elmachtoub and Grigas, 2022) trained as PyEPO trains it,
  by Adam: loss -min_x (2 c_hat - c)'x + 2 c_hat'x* - c'x*, subgradient 2 (x* - x(2 c_hat - c)),
  one oracle call (`baselines.SPOPlus` keeps the paper's subgradient steps step / sqrt(k + 1)).
* `DBB`, differentiable black-box optimization (Vlastelica, Paulus et al., 2020), here on the
  decision loss c'x(c_hat) (the regret up to a constant). Its gradient w.r.t. x is c, so the
  second oracle call is at c_hat + lam_interp c, and the gradient is
  -(x(c_hat) - x(c_hat + lam_interp c)) / lam_interp: the exact gradient of the
  interpolated loss  f(c_hat) = [phi(c_hat + lam_interp c) - phi(c_hat)] / lam_interp  with
  phi(w) = min_x w'x, which tends to c'x(c_hat) as lam_interp -> 0.

On an LP with a full set of slack columns (the knapsacks) the methods that perturb c_hat with
noise (PFYL, and DPO, I-MLE and AI-MLE of `perturbed`) keep Theta at 0 on the slacks and add
no noise there (``cost_columns="non_slack"``, their default, as SPO+'s; `cost_columns.slack_columns`):
PyEPO perturbs the costs of the decision variables only, and noise on a slack cost reaches
every item through the constraints. The others learn every column (``"all"``). The shortest
path has no such columns and learns every one either way.

Both start from Theta = 0, visit the samples in ``n_epochs`` reshuffled passes of
``batch_size`` consecutive samples, average the batch gradient, add lam * Theta (L2), and
take Adam steps of size ``step_size`` (as PyEPO's reference experiments train them).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..blas_threads import one_blas_thread
from ..lp import StandardFormLP
from .base import (NON_NEGATIVE, POSITIVE, POSITIVE_INT, LinearCostModel, StrOptions, check_features,
                   check_samples, estimator_hyperparameters, resolve_lp)
from .cost_columns import SPO_COST_COLUMNS, learned_cost_columns

ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


def perturbed_solutions(C_hat, lp: StandardFormLP, noise: np.ndarray, sigma, shift=None):
    """Solutions and optimal values of the perturbed costs c_hat_t (+ shift_t) + sigma_t xi_tm.

    Args:
        C_hat: (T, n); noise: (T, M, n) draws xi; sigma: one scale or one per sample;
        shift: None, or (T, n) added to every perturbation of its sample (I-MLE's target).

    Returns:
        (x (T, M, n), objective (T, M)), from ONE batched `lp.solve` over the T * M costs.
    """
    T, n = C_hat.shape
    M = noise.shape[1]
    sigma = np.broadcast_to(np.asarray(sigma, dtype=float), (T,))[:, None, None]
    centre = C_hat if shift is None else C_hat + shift
    perturbed = (centre[:, None, :] + sigma * noise).reshape(T * M, n)
    solution = lp.subset(np.repeat(np.arange(T), M)).solve(perturbed, need_basis=False)
    return solution.x.reshape(T, M, n), solution.objective.reshape(T, M)


def pfyl_loss(C_hat, X_star, lp: StandardFormLP, noise: np.ndarray, sigma) -> tuple[np.ndarray, np.ndarray]:
    """Perturbed Fenchel-Young losses and gradients w.r.t. c_hat with FIXED noise draws.

    loss_t = c_hat_t'x*_t - (1/M) sum_m min_x (c_hat_t + sigma xi_tm)'x,
    grad_t = x*_t - (1/M) sum_m x*(c_hat_t + sigma xi_tm).

    Args:
        C_hat: (T, n) predicted costs; X_star: (T, n) optimal solutions of the true costs;
        lp: the LPs (shared constraints, or per sample: T of them); noise: (T, M, n)
        standard normal draws xi; sigma: the perturbation scale (> 0), one or one per sample.

    Returns:
        (loss (T,), grad (T, n)); one batched `lp.solve` over the T * M perturbed costs.
    """
    x, value = perturbed_solutions(C_hat, lp, noise, sigma)
    return np.einsum("tj,tj->t", C_hat, X_star) - value.mean(axis=1), X_star - x.mean(axis=1)


def value_difference_loss(C_hat, C, lp: StandardFormLP, h, upper: float, lower: float):
    """The finite difference of the optimal value phi(w) = min_x w'x along the true costs,

    f_t = [phi(c_hat_t + upper h c_t) - phi(c_hat_t + lower h c_t)] / ((upper - lower) h),

    and its exact gradient [x(c_hat_t + upper h c_t) - x(c_hat_t + lower h c_t)] / ((upper - lower) h).
    DBB is the forward difference (1, 0), PG's PGB the backward (0, -1), PGC the central (1, -1).
    h is one width or one per sample; both solves are one batched `lp.solve`.

    Returns:
        (loss (T,), grad (T, n)).
    """
    T = C_hat.shape[0]
    h = np.broadcast_to(np.asarray(h, dtype=float), (T,))
    points = [C_hat + (factor * h)[:, None] * C if factor else C_hat for factor in (lower, upper)]
    both = lp.subset(np.tile(np.arange(T), 2)).solve(np.concatenate(points), need_basis=False)
    x, value = both.x.reshape(2, T, -1), both.objective.reshape(2, T)
    width = (upper - lower) * h
    return (value[1] - value[0]) / width, (x[1] - x[0]) / width[:, None]


def spo_plus_loss(C_hat, C, X_star, lp: StandardFormLP) -> tuple[np.ndarray, np.ndarray]:
    """SPO+ losses and subgradients w.r.t. c_hat (Elmachtoub and Grigas, 2022):

    loss_t = -min_x (2 c_hat_t - c_t)'x + 2 c_hat_t'x*_t - c_t'x*_t  (>= 0, 0 at c_hat = c),
    grad_t = 2 (x*_t - x(2 c_hat_t - c_t)).   One batched `lp.solve`.

    Returns:
        (loss (T,), grad (T, n)).
    """
    tilde = lp.solve(2.0 * C_hat - C, need_basis=False)
    loss = -tilde.objective + np.einsum("tj,tj->t", 2.0 * C_hat - C, X_star)
    return loss, 2.0 * (X_star - tilde.x)


def dbb_loss(C_hat, C, lp: StandardFormLP, lam_interp) -> tuple[np.ndarray, np.ndarray]:
    """DBB's interpolated decision loss and its gradient w.r.t. c_hat.

    f_t = [min_x (c_hat_t + lam c_t)'x - min_x c_hat_t'x] / lam,
    grad_t = [x(c_hat_t + lam c_t) - x(c_hat_t)] / lam   (`value_difference_loss`, forward).

    lam_interp is one strength or one per sample. Both calls are one batched `lp.solve`.

    Returns:
        (loss (T,), grad (T, n)).
    """
    return value_difference_loss(C_hat, C, lp, lam_interp, 1.0, 0.0)


@estimator_hyperparameters(keyword_only=True)
class _DecisionFocusedModel(LinearCostModel):
    """Shared training loop and hyperparameters of the decision-focused methods (`PFYL`, `DBB`,
    `cave.CaVE`, the solution-pool losses of `solution_pool`): subclasses give `_stacked_loss`."""

    needs_costs: ClassVar[bool] = True
    _parameter_constraints: ClassVar[dict] = {"step_size": [POSITIVE], "lam": [NON_NEGATIVE],
                                              "batch_size": [POSITIVE_INT], "n_epochs": [POSITIVE_INT],
                                              "cost_columns": [StrOptions(set(SPO_COST_COLUMNS))]}
    step_size: float = 0.01
    lam: float = 0.0
    batch_size: int = 32
    n_epochs: int = 10
    random_state: int = 0
    # "non_slack": Theta is 0 on the LP's slack columns (and the perturbed methods put no noise
    # there); "all" learns every column. An LP without a full set of slacks (the shortest path)
    # learns every column either way.
    cost_columns: str = "all"


    @staticmethod
    def _stacked_loss(models, C_hat, C, X_star, lp, rng, samples, state) -> tuple[np.ndarray, np.ndarray]:
        """Losses (k*B,) and gradients (k*B, n) of k models' batches stacked model-major:
        C_hat (k*B, n); C (None for a method that does not need the costs), X_star, lp: the B
        samples repeated k times; samples (k*B,): their indices among the training samples;
        state: what `_training_state` prepared for this group."""
        raise NotImplementedError

    @classmethod
    def _training_state(cls, models, X_star, lp: StandardFormLP):
        """What a group's steps share beyond the samples (a solution pool, the optimality
        cones of x*), prepared once per fit; None here."""
        return None

    @staticmethod
    def _initial_coefs(models, rng, n: int, d: int) -> np.ndarray:
        """(k, n, d) starting Theta of a group: zero (a scale-free loss draws them instead:
        `linear_layer_start`)."""
        return np.zeros((len(models), n, d))

    def _group_key(self) -> tuple:
        """Models with equal keys draw the same batches and noise: they train in lockstep."""
        return int(self.batch_size), int(self.n_epochs), repr(self.random_state), str(self.cost_columns)

    def fit(self, Z, X_star=None, *, A=None, b=None, lp: StandardFormLP | None = None, basis=None, C=None):
        """Fit on features Z (T, d), true costs C (T, n) and the LPs (lp or A, b); returns self.
        X* is taken from the argument when given, else solved once from C. A method that
        learns from x* alone (``needs_costs`` False) needs X_star and never reads C."""
        type(self).fit_many([self], Z, X_star, lp=resolve_lp(A, b, lp), C=C)
        return self

    @classmethod
    def fit_many(cls, models: list, Z, X_star=None, *, lp: StandardFormLP, basis=None, C=None) -> list:
        """Fit several models of this class on the same samples (a tuning grid); returns them.

        Models that share batch_size, n_epochs and random_state (they may differ in the
        other hyperparameters) run in lockstep: each step's oracle calls of all of them are
        one batched call over the stacked batches. Every model ends exactly where its own
        `fit` would (the oracles solve row by row and the noise is drawn per group).
        """
        for model in models:
            model.validate_hyperparameters()
        Z = check_features(Z)
        T = Z.shape[0]
        if not models:
            return models
        if cls.needs_costs:
            C = models[0]._require_costs(C, T, lp.n)
        else:
            C = None  # never read: these methods learn from x* alone
            if X_star is None:
                raise ValueError(f"{cls.__name__} learns from the observed optimal solutions: pass X_star")
        if lp.A.ndim == 3 and lp.A.shape[0] != T:
            raise ValueError(f"the LP has {lp.A.shape[0]} per-sample constraint sets but Z has {T} samples")
        X_star = lp.solve(C, need_basis=False).x if X_star is None else X_star
        X_star = check_samples("X_star", X_star, T, lp.n)
        groups: dict[tuple, list] = {}
        for model in models:
            groups.setdefault(model._group_key(), []).append(model)
        # The products of a step are tiny: on a busy machine BLAS threads only wait for each
        # other (a PFYL fit at T = 1000 measured 8-14 s with them, 0.8-1.1 s without).
        with one_blas_thread():
            for group in groups.values():
                learned = learned_cost_columns(lp, group[0].cost_columns)
                for model in group:
                    model.learned_columns_ = learned
                _adam_lockstep(group, Z, C, X_star, lp)
        return models


def linear_layer_start(models, rng, n: int, d: int) -> np.ndarray:
    """(k, n, d) starting Theta from a seeded uniform draw in +-1/sqrt(d) (the default start
    of a linear layer, as PyEPO's models start), for losses that cannot start at Theta = 0;
    one draw per group, so every model of a lockstep grid starts where its own fit would."""
    start = rng.uniform(-1.0, 1.0, (n, d)) / np.sqrt(d)
    return np.repeat(start[None], len(models), axis=0)


def _adam_lockstep(models: list[_DecisionFocusedModel], Z, C, X_star, lp: StandardFormLP) -> None:
    """Mini-batch Adam of models that share their batches, all steps' oracle calls stacked."""
    T, d = Z.shape
    k, n = len(models), lp.n
    first = models[0]
    rng = np.random.default_rng(first.random_state)
    lams = np.array([float(m.lam) for m in models])[:, None, None]
    step_sizes = np.array([float(m.step_size) for m in models])[:, None, None]
    learned = first.learned_columns_[None, :, None]  # (1, n, 1): the columns whose costs are learned
    thetas = first._initial_coefs(models, rng, n, d) * learned
    state = first._training_state(models, X_star, lp)
    moment1, moment2 = np.zeros_like(thetas), np.zeros_like(thetas)
    beta1, beta2 = ADAM_BETAS
    size = min(int(first.batch_size), T)
    losses, step = [], 0
    for _ in range(int(first.n_epochs)):
        order = rng.permutation(T)
        for start in range(0, T, size):
            idx = order[start:start + size]
            B = len(idx)
            Z_batch = Z[idx]
            C_hat = np.einsum("bd,knd->kbn", Z_batch, thetas).reshape(k * B, n)
            stacked = np.tile(idx, k)
            loss, grad_c = first._stacked_loss(models, C_hat, None if C is None else C[stacked], X_star[stacked],
                                               lp.subset(stacked), rng, stacked, state)
            losses.append(loss.reshape(k, B).mean(axis=1))
            grad = (np.einsum("kbn,bd->knd", grad_c.reshape(k, B, n), Z_batch) / B + lams * thetas) * learned
            step += 1
            moment1 = beta1 * moment1 + (1 - beta1) * grad
            moment2 = beta2 * moment2 + (1 - beta2) * grad**2
            corrected = (moment1 / (1 - beta1**step)) / (np.sqrt(moment2 / (1 - beta2**step)) + ADAM_EPS)
            thetas -= step_sizes * corrected
    history = np.asarray(losses).reshape(-1, k)
    for i, model in enumerate(models):
        model.coef_ = thetas[i]
        model.n_features_in_ = d
        model.loss_history_ = history[:, i].copy()
        model.n_steps_ = step


@estimator_hyperparameters(keyword_only=True)
class _PerturbedModel(_DecisionFocusedModel):
    """Shared hyperparameters and noise of the methods that perturb c_hat with random noise
    (`PFYL`, and DPO, I-MLE and AI-MLE of `perturbed`)."""

    _parameter_constraints: ClassVar[dict] = {**_DecisionFocusedModel._parameter_constraints,
                                              "sigma": [POSITIVE], "n_perturbations": [POSITIVE_INT]}
    sigma: float = 1.0
    n_perturbations: int = 10
    # PyEPO perturbs the costs of the decision variables: noise on a knapsack's slack costs would
    # reach every item through the constraints (W'xi_s + xi_u, about 7 times the item's own)
    cost_columns: str = "non_slack"

    def _group_key(self) -> tuple:
        return super()._group_key() + (int(self.n_perturbations),)

    @staticmethod
    def _draw(models, rng, B: int, n: int) -> np.ndarray:
        """(B, M, n) noise; one draw shared by the group (a model's fit alone draws the same)."""
        return rng.standard_normal((B, int(models[0].n_perturbations), n))

    @classmethod
    def _stacked_noise(cls, models, rng, C_hat) -> tuple[np.ndarray, np.ndarray, int]:
        """The group's draw tiled over its k models, their sigmas per row, and B."""
        k = len(models)
        B = C_hat.shape[0] // k
        noise = cls._draw(models, rng, B, C_hat.shape[1]) * models[0].learned_columns_  # none on the slacks
        return np.tile(noise, (k, 1, 1)), np.repeat([float(m.sigma) for m in models], B), B


@estimator_hyperparameters
class PFYL(_PerturbedModel):
    """Linear c_hat = Theta z trained on the perturbed Fenchel-Young loss (Berthet et al., 2020).

    Minimizes the batch mean of  c_hat'x* - mean_m min_x (c_hat + sigma xi_m)'x  plus
    (lam/2)||Theta||_F^2 by Adam; fresh noise (n_perturbations draws per sample) every step.

    Attributes:
        coef_: (n, d) Theta.  loss_history_: the mean loss of each batch before its step.
        n_steps_: the number of Adam steps (one batched oracle call each).
    """

    @classmethod
    def _stacked_loss(cls, models, C_hat, C, X_star, lp, rng, samples, state):
        noise, sigmas, _ = cls._stacked_noise(models, rng, C_hat)
        return pfyl_loss(C_hat, X_star, lp, noise, sigmas)


@estimator_hyperparameters
class DBB(_DecisionFocusedModel):
    """Linear c_hat = Theta z trained by differentiable black-box optimization (Vlastelica et al.,
    2020) on the decision loss c'x(c_hat), interpolation strength ``lam_interp``.

    Attributes:
        coef_: (n, d) Theta.  loss_history_: the mean interpolated loss of each batch.
        n_steps_: the number of Adam steps (two batched oracle calls each).
    """

    _parameter_constraints: ClassVar[dict] = {**_DecisionFocusedModel._parameter_constraints, "lam_interp": [POSITIVE]}

    lam_interp: float = 10.0

    @staticmethod
    def _stacked_loss(models, C_hat, C, X_star, lp, rng, samples, state):
        B = C_hat.shape[0] // len(models)
        return dbb_loss(C_hat, C, lp, np.repeat([float(m.lam_interp) for m in models], B))


@estimator_hyperparameters
class SPOPlusAdam(_DecisionFocusedModel):
    """Linear c_hat = Theta z trained on the SPO+ loss (Elmachtoub and Grigas, Management Science
    2022) by mini-batch Adam, as PyEPO's experiments train it (`spo_plus_loss`). Theta is 0 on a
    knapsack's slack columns by default (``cost_columns="non_slack"``, as `baselines.SPOPlus`:
    docs/decisions/024-spo-plus-slack-costs.md).

    Attributes:
        coef_: (n, d) Theta.  loss_history_: the mean SPO+ loss of each batch before its step.
        n_steps_: the number of Adam steps (one batched oracle call each).
    """

    cost_columns: str = "non_slack"

    @staticmethod
    def _stacked_loss(models, C_hat, C, X_star, lp, rng, samples, state):
        return spo_plus_loss(C_hat, C, X_star, lp)
