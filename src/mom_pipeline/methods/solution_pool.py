"""Decision-focused losses on a solution pool: NCE, CMAP and the three learning-to-rank losses.

Each learns c_hat = Theta z by the mini-batch Adam of `dfl._DecisionFocusedModel`; the loss
of a sample compares the objective values of the feasible solutions of a pool S instead of
solving an LP per gradient. S starts as the distinct optimal solutions x* of the training
samples, and, at each step with probability ``solve_ratio``, the batch's decisions
x(c_hat) (one batched oracle call) join it: the pool grows with the solutions found during
training. Every model of a lockstep grid keeps its own pool. The constraints must be shared by
every sample (a solution of one sample is then feasible for all).

For the minimization LP min c'x, with ĉ = c_hat and the pool's solutions s in S:

* `NCE`, noise-contrastive estimation (Mulamba, Mandi, Diligenti, Lombardi, Bucarey and Guns,
  "Contrastive Losses and Solution Caching for Predict-and-Optimize", IJCAI 2021): the pool's
  solutions are the negatives of x*,  L = mean_s (ĉ'x* - ĉ's),  gradient x* - mean_s s.
  It needs x* alone, not the costs.
* `CMAP`, contrastive maximum a posteriori (the same paper; PyEPO's ``contrastiveMAP``): the
  max-margin case of NCE with the single most violating negative, the pool's best solution
  under ĉ:  L = ĉ'x* - min_s ĉ's,  gradient x* - argmin_s ĉ's. It needs x* alone as well.
* The learning-to-rank losses of Mandi, Bucarey, Mulamba and Guns ("Decision-Focused Learning:
  Through the Lens of Learning to Rank", ICML 2022) rank the pool by the true costs c:
  - `PointwiseLTR`: the objective values regressed,  L = mean_s (ĉ's - c's)^2,
    gradient 2 mean_s (ĉ's - c's) s;
  - `PairwiseLTR`: the pool's best solution under c, s_b, against each solution s that is
    strictly worse under c, with a margin m:  L = mean_s max(0, m + ĉ's_b - ĉ's),
    gradient mean_s [active] (s_b - s) (every pool member pairs with the best: the pairs with
    the solution the ranking must put first, as PyEPO pairs them, not all |S|^2 pairs);
  - `ListwiseLTR`: the cross entropy of the softmax distributions over the pool,
    p_c(s) ∝ exp(-c's/t) and p_ĉ(s) ∝ exp(-ĉ's/t) (temperature t):
    L = -sum_s p_c(s) log p_ĉ(s),  gradient (E_{p_c}[s] - E_{p_ĉ}[s]) / t.
  These need the costs c.
"""

from __future__ import annotations

from numbers import Real
from typing import ClassVar

import numpy as np
from scipy.special import log_softmax, softmax
from sklearn.utils._param_validation import Interval

from ..lp import StandardFormLP
from .base import POSITIVE, estimator_hyperparameters
from .dfl import _DecisionFocusedModel

# Solutions closer than this (in every entry) are the same pool member.
POOL_DECIMALS = 9


class SolutionPool:
    """Distinct feasible solutions (rows), in the order they were found.

    The rows live in one array that doubles when full, so a step reads the pool as a view
    instead of stacking every row again (the pool grows to thousands of rows)."""

    def __init__(self, X):
        X = np.asarray(X, dtype=float)
        self._keys: set[bytes] = set()
        self._rows = np.empty((max(len(X), 1), X.shape[1]))
        self._size = 0
        self.add(X)

    def add(self, X) -> None:
        """Add the rows of X that are not in the pool yet."""
        X = np.asarray(X, dtype=float)
        for x, rounded in zip(X, np.round(X, POOL_DECIMALS)):
            key = rounded.tobytes()
            if key not in self._keys:
                self._keys.add(key)
                if self._size == len(self._rows):
                    grown = np.empty((2 * len(self._rows), self._rows.shape[1]))
                    grown[:self._size] = self._rows
                    self._rows = grown
                self._rows[self._size] = x
                self._size += 1

    @property
    def solutions(self) -> np.ndarray:
        """(|S|, n) the pool's solutions (a read-only view)."""
        view = self._rows[:self._size]
        view.setflags(write=False)
        return view

    def __len__(self) -> int:
        return self._size


def nce_loss(C_hat, X_star, S) -> tuple[np.ndarray, np.ndarray]:
    """NCE's losses mean_s (ĉ_t'x*_t - ĉ_t's) (T,) and gradients x*_t - mean_s s (T, n)."""
    mean_solution = S.mean(axis=0)
    return np.einsum("tj,tj->t", C_hat, X_star) - C_hat @ mean_solution, X_star - mean_solution


def cmap_loss(C_hat, X_star, S) -> tuple[np.ndarray, np.ndarray]:
    """CMAP's losses ĉ_t'x*_t - min_s ĉ_t's (T,) and gradients x*_t - argmin_s ĉ_t's (T, n)."""
    predicted = C_hat @ S.T
    best = np.argmin(predicted, axis=1)
    return np.einsum("tj,tj->t", C_hat, X_star) - predicted[np.arange(len(C_hat)), best], X_star - S[best]


def pointwise_ltr_loss(C_hat, C, S) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise LTR: mean_s (ĉ_t's - c_t's)^2 (T,) and its gradient 2 mean_s (ĉ_t's - c_t's) s."""
    gap = (C_hat - C) @ S.T  # (T, |S|)
    return np.mean(gap**2, axis=1), 2 * gap @ S / len(S)


def pairwise_ltr_loss(C_hat, C, S, margin) -> tuple[np.ndarray, np.ndarray]:
    """Pairwise LTR: the pool's best solution under c_t against each strictly worse one, mean
    hinge max(0, margin + ĉ_t's_b - ĉ_t's) (T,) and its gradient (T, n)."""
    true_values, predicted = C @ S.T, C_hat @ S.T
    best = np.argmin(true_values, axis=1)
    rows = np.arange(len(C))
    scale = np.maximum(1.0, np.abs(true_values).max(axis=1, keepdims=True))
    worse = true_values > true_values[rows, best][:, None] + 1e-9 * scale
    hinge = margin + predicted[rows, best][:, None] - predicted
    active = worse & (hinge > 0)
    pairs = np.maximum(worse.sum(axis=1), 1)
    loss = np.where(active, hinge, 0.0).sum(axis=1) / pairs
    grad = (active.sum(axis=1)[:, None] * S[best] - active @ S) / pairs[:, None]
    return loss, grad


def listwise_ltr_loss(C_hat, C, S, temperature) -> tuple[np.ndarray, np.ndarray]:
    """Listwise LTR: the cross entropy -sum_s p_c(s) log p_ĉ(s) of the softmax distributions
    over the pool (T,) and its gradient (E_{p_c}[s] - E_{p_ĉ}[s]) / temperature (T, n)."""
    target = softmax(-(C @ S.T) / temperature, axis=1)
    log_predicted = log_softmax(-(C_hat @ S.T) / temperature, axis=1)
    loss = -np.sum(target * log_predicted, axis=1)
    return loss, (target @ S - np.exp(log_predicted) @ S) / temperature


@estimator_hyperparameters(keyword_only=True)
class _SolutionPoolModel(_DecisionFocusedModel):
    """The shared pool and step of the solution-pool losses: subclasses give `_pool_loss`."""

    _parameter_constraints: ClassVar[dict] = {**_DecisionFocusedModel._parameter_constraints,
                                              "solve_ratio": [Interval(Real, 0, 1, closed="both")]}
    solve_ratio: float = 1.0

    def _pool_loss(self, C_hat, C, X_star, S) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _group_key(self) -> tuple:
        # the draw that decides whether a step solves is shared by the group
        return super()._group_key() + (float(self.solve_ratio),)

    @classmethod
    def _training_state(cls, models, X_star, lp: StandardFormLP) -> list[SolutionPool]:
        if lp.A.ndim != 2 or lp.b.ndim != 1:
            raise ValueError(f"{cls.__name__} needs constraints shared by every sample (a pool solution must be "
                             "feasible for all of them); this LP has per-sample constraints")
        return [SolutionPool(X_star) for _ in models]  # one pool per model: each grows with its own decisions

    @staticmethod
    def _stacked_loss(models, C_hat, C, X_star, lp, rng, samples, state):
        k = len(models)
        B = C_hat.shape[0] // k
        if rng.random() < float(models[0].solve_ratio):
            found = lp.solve(C_hat, need_basis=False).x  # every model's batch in one oracle call
            for i, pool in enumerate(state):
                pool.add(found[i * B:(i + 1) * B])
        parts = [model._pool_loss(C_hat[i * B:(i + 1) * B], None if C is None else C[i * B:(i + 1) * B],
                                  X_star[i * B:(i + 1) * B], pool.solutions)
                 for i, (model, pool) in enumerate(zip(models, state))]
        for model, pool in zip(models, state):
            model.pool_size_ = len(pool)
        return np.concatenate([loss for loss, _ in parts]), np.concatenate([grad for _, grad in parts])


@estimator_hyperparameters
class NCE(_SolutionPoolModel):
    """Linear c_hat = Theta z trained from x* alone by noise-contrastive estimation on a growing
    solution pool (Mulamba et al., IJCAI 2021; see `solution_pool`).

    Attributes:
        coef_: (n, d) Theta.  loss_history_: the mean loss of each batch before its step.
        n_steps_: the number of Adam steps.  pool_size_: the pool's size at the end.
    """

    needs_costs: ClassVar[bool] = False

    def _pool_loss(self, C_hat, C, X_star, S):
        return nce_loss(C_hat, X_star, S)


@estimator_hyperparameters
class CMAP(_SolutionPoolModel):
    """Linear c_hat = Theta z trained from x* alone by contrastive MAP on a growing solution
    pool (Mulamba et al., IJCAI 2021; see `solution_pool`). Attributes as `NCE`."""

    needs_costs: ClassVar[bool] = False

    def _pool_loss(self, C_hat, C, X_star, S):
        return cmap_loss(C_hat, X_star, S)


@estimator_hyperparameters
class PointwiseLTR(_SolutionPoolModel):
    """Linear c_hat = Theta z trained by pointwise learning to rank on a growing solution pool
    (Mandi et al., ICML 2022; see `solution_pool`). Attributes as `NCE`."""

    def _pool_loss(self, C_hat, C, X_star, S):
        return pointwise_ltr_loss(C_hat, C, S)


@estimator_hyperparameters
class PairwiseLTR(_SolutionPoolModel):
    """Linear c_hat = Theta z trained by pairwise learning to rank with margin ``margin`` on a
    growing solution pool (Mandi et al., ICML 2022; see `solution_pool`). Attributes as `NCE`."""

    _parameter_constraints: ClassVar[dict] = {**_SolutionPoolModel._parameter_constraints, "margin": [POSITIVE]}
    margin: float = 0.1

    def _pool_loss(self, C_hat, C, X_star, S):
        return pairwise_ltr_loss(C_hat, C, S, float(self.margin))


@estimator_hyperparameters
class ListwiseLTR(_SolutionPoolModel):
    """Linear c_hat = Theta z trained by listwise learning to rank (softmax cross entropy at
    ``temperature``) on a growing solution pool (Mandi et al., ICML 2022; see `solution_pool`).
    Attributes as `NCE`."""

    _parameter_constraints: ClassVar[dict] = {**_SolutionPoolModel._parameter_constraints,
                                              "temperature": [POSITIVE]}
    temperature: float = 1.0

    def _pool_loss(self, C_hat, C, X_star, S):
        return listwise_ltr_loss(C_hat, C, S, float(self.temperature))
