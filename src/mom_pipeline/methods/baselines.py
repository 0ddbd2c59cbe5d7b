"""Predict-then-optimize baselines: regressions of the costs c on the features z.

Every baseline needs the true costs C in training (``needs_costs = True``): fitting from
the observed optimal solutions X* alone raises `MissingCostsError`. Decisions come from
solving the LP with the predicted costs (`CostModel.decide`).

* `OLS`, `Ridge`: linear c_hat = Theta z with Theta (n, d), no intercept (z carries a
  constant feature).
* `RandomForest`: scikit-learn's multi-output RandomForestRegressor.
* `KernelRidgeCost`: kernel ridge regression with the paper's kernel conventions.
* `SPOPlus`: linear c_hat = Theta z trained on the SPO+ surrogate loss of Elmachtoub and
  Grigas by mini-batch stochastic subgradient descent, one batched LP solve per step.

Regularized losses are SUMMED over samples (not averaged), so the regularization constant
lam keeps one meaning from one training size to the next only up to that factor T.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from sklearn.ensemble import RandomForestRegressor
from sklearn.linear_model import LinearRegression
from sklearn.linear_model import Ridge as SkRidge

from ..lp import StandardFormLP
from .base import (NON_NEGATIVE, POSITIVE, POSITIVE_INT, CostModel, LinearCostModel, NotFittedError, StrOptions,
                   check_features, check_samples, estimator_hyperparameters, resolve_lp)
from .cost_columns import SPO_COST_COLUMNS, learned_cost_columns, slack_columns  # noqa: F401 (tests import it here)
from .kernels import KERNEL_CONSTRAINTS

KERNELS = ("poly", "rbf")


def _n_columns(C, X_star, A, lp: StandardFormLP | None) -> int | None:
    """The number of LP columns n, from whichever input carries it."""
    if lp is not None:
        return lp.n
    if A is not None:
        return np.shape(A)[-1]
    if X_star is not None:
        return np.shape(X_star)[-1]
    if C is not None and np.ndim(C) == 2:
        return np.shape(C)[1]
    return None


class _RegressionBaseline(CostModel):
    """A regression of C on Z; subclasses build the scikit-learn estimator in `_regressor`.

    The LP inputs (X_star, A, b, lp, basis) are accepted for a uniform interface and only
    used to check the number of columns of C.
    """

    needs_costs: ClassVar[bool] = True

    def _regressor(self):
        raise NotImplementedError

    def fit(self, Z, X_star=None, *, A=None, b=None, lp: StandardFormLP | None = None, basis=None, C=None):
        """Fit on features Z (T, d) and true costs C (T, n); returns self."""
        Z = check_features(Z)
        C = self._require_costs(C, Z.shape[0], _n_columns(C, X_star, A, lp))
        regressor = self._regressor().fit(Z, C)
        self.n_features_in_ = Z.shape[1]
        self.n_outputs_ = C.shape[1]
        self._store(regressor)
        return self

    def _store(self, regressor) -> None:
        # Kept whole for the nonlinear models; the linear ones store Theta instead.
        self.model_ = regressor

    def predict_cost(self, Z) -> np.ndarray:
        """Predicted costs (T, n) for features Z (T, d)."""
        self._check_fitted()
        Z = check_features(Z)
        if Z.shape[1] != self.n_features_in_:
            raise ValueError(f"Z has {Z.shape[1]} features; {type(self).__name__} was fitted with {self.n_features_in_}")
        if hasattr(self, "coef_"):
            return Z @ self.coef_.T
        return np.asarray(self.model_.predict(Z), dtype=float).reshape(Z.shape[0], self.n_outputs_)


class _LinearBaseline(_RegressionBaseline):
    def _store(self, regressor) -> None:
        # coef_ is Theta, (n, d): c_hat = Theta z.
        self.coef_ = np.asarray(regressor.coef_, dtype=float).reshape(self.n_outputs_, self.n_features_in_)


class OLS(_LinearBaseline):
    """Least squares  min_Theta sum_t ||Theta z_t - c_t||^2  without intercept."""

    def _regressor(self):
        return LinearRegression(fit_intercept=False)


@estimator_hyperparameters
class Ridge(_LinearBaseline):
    """Ridge regression  min_Theta (1/2) sum_t ||Theta z_t - c_t||^2 + (lam/2) ||Theta||_F^2.

    Twice this loss is scikit-learn's Ridge objective  ||C - Z W||_F^2 + alpha ||W||_F^2
    with alpha = lam (the losses are summed over samples, not averaged; an averaged loss
    (1/2T) sum_t ... + (lam/2)||Theta||^2 would need alpha = T * lam). No intercept: z has
    a constant feature, whose coefficient is penalized like the others.
    """

    _parameter_constraints: ClassVar[dict] = {"lam": [NON_NEGATIVE]}

    lam: float = 1.0

    def _regressor(self):
        return SkRidge(alpha=float(self.lam), fit_intercept=False)


@estimator_hyperparameters
class RandomForest(_RegressionBaseline):
    """scikit-learn's RandomForestRegressor fitted on all n outputs at once (multi-output)."""

    _parameter_constraints: ClassVar[dict] = {"n_estimators": [POSITIVE_INT], "max_depth": [None, POSITIVE_INT],
                                              "min_samples_leaf": [POSITIVE_INT]}

    n_estimators: int = 100
    max_depth: int | None = None
    min_samples_leaf: int = 1
    random_state: int = 0
    n_jobs: int = 1

    def _regressor(self):
        return RandomForestRegressor(n_estimators=self.n_estimators, max_depth=self.max_depth,
                                     min_samples_leaf=self.min_samples_leaf, random_state=self.random_state,
                                     n_jobs=self.n_jobs)


@estimator_hyperparameters
class KernelRidgeCost(_RegressionBaseline):
    """Kernel ridge regression of c on z with the paper's kernels.

    Loss, over functions f in the kernel's RKHS with values in R^n:
    (1/2) sum_t ||f(z_t) - c_t||^2 + (lam/2) ||f||^2, i.e. scikit-learn's KernelRidge with
    alpha = lam (as `Ridge`). Kernels, with gamma the paper's scale parameter:

    * ``"poly"``: (z.z'/gamma + 1)^degree  -> sklearn kernel="poly", gamma=1/gamma, coef0=1;
    * ``"rbf"``:  exp(-||z - z'||^2 / gamma) -> sklearn kernel="rbf", gamma=1/gamma
      (rbf_norm="squared", the paper's text), or exp(-||z - z'|| / gamma) (rbf_norm="unsquared",
      the released code that drew the published figures; docs/paper_notes.md).

    scikit-learn's ``gamma`` is therefore the INVERSE of the ``gamma`` here. ``degree`` is
    ignored by the RBF kernel, ``rbf_norm`` by the polynomial one.
    """

    _parameter_constraints: ClassVar[dict] = {**KERNEL_CONSTRAINTS, "lam": [POSITIVE]}

    kernel: str = "poly"
    lam: float = 1.0
    degree: int = 2
    gamma: float = 1.0
    rbf_norm: str = "squared"

    def _kernel(self, X, Y) -> np.ndarray:
        from .kernels import kernel_matrix  # the paper's kernel conventions, shared with KernelMOM

        return kernel_matrix(X, Y, self.kernel, int(self.degree), self.gamma, self.rbf_norm)

    def fit(self, Z, X_star=None, *, A=None, b=None, lp: StandardFormLP | None = None, basis=None, C=None):
        """Fit on features Z (T, d) and true costs C (T, n); returns self."""
        return self.fit_many([self], Z, X_star, A=A, lp=lp, C=C)[0]

    @classmethod
    def fit_many(cls, models: list["KernelRidgeCost"], Z, X_star=None, *, A=None, b=None,
                 lp: StandardFormLP | None = None, basis=None, C=None) -> list:
        """Fit several kernel ridges on the same samples (a tuning grid); returns them.

        The dual coefficients solve (K + lam I) a = C. Models with the same kernel share
        one eigendecomposition K = Q diag(e) Q', which serves every lam:
        a = Q diag(1 / (e + lam)) Q' C (scikit-learn's KernelRidge solves each lam anew).
        """
        Z = check_features(Z)
        groups: dict[tuple, list] = {}
        for model in models:
            model.validate_hyperparameters()
            degree = int(model.degree) if model.kernel == "poly" else None
            norm = model.rbf_norm if model.kernel == "rbf" else None
            groups.setdefault((model.kernel, degree, float(model.gamma), norm), []).append(model)
        C = models[0]._require_costs(C, Z.shape[0], _n_columns(C, X_star, A, lp))
        for group in groups.values():
            eigenvalues, Q = np.linalg.eigh(group[0]._kernel(Z, Z))
            projected = Q.T @ C
            for model in group:
                model.dual_coef_ = Q @ (projected / (eigenvalues + float(model.lam))[:, None])
                model.reference_ = Z
                model.n_features_in_ = Z.shape[1]
                model.n_outputs_ = C.shape[1]
        return models

    def predict_cost(self, Z) -> np.ndarray:
        """Predicted costs (T, n) for features Z (T, d): K(Z, Z_train) a."""
        if not hasattr(self, "dual_coef_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit first")
        Z = check_features(Z)
        if Z.shape[1] != self.n_features_in_:
            raise ValueError(f"Z has {Z.shape[1]} features; {type(self).__name__} was fitted with {self.n_features_in_}")
        return self._kernel(Z, self.reference_) @ self.dual_coef_


# ----------------------------------------------------------------------------- SPO+


def spo_plus_loss(C_hat, C, X_star, lp: StandardFormLP) -> tuple[np.ndarray, np.ndarray]:
    """SPO+ losses and subgradients with respect to c_hat, for a batch of samples.

    loss_t = (2 c_hat_t - c_t)'x*_t - min_{x in X_t} (2 c_hat_t - c_t)'x   (>= 0, = 0 at c_hat = c)
    grad_t = 2 (x*_t - x_tilde_t),  x_tilde_t in argmin_x (2 c_hat_t - c_t)'x.

    Args:
        C_hat, C: (T, n) predicted and true costs; X_star: (T, n) optimal solutions for C;
        lp: the T LPs (shared or per-sample constraints). One batched `lp.solve` call.

    Returns:
        (loss (T,), grad (T, n)).
    """
    return _spo_plus_terms(2.0 * C_hat - C, X_star, lp)


def _spo_plus_terms(C_tilde, X_star, lp: StandardFormLP) -> tuple[np.ndarray, np.ndarray]:
    """`spo_plus_loss` from C_tilde = 2 c_hat - c (the lockstep computes it once, for its
    finiteness check too)."""
    solution = lp.solve(C_tilde, need_basis=False)
    loss = np.einsum("tj,tj->t", C_tilde, X_star) - solution.objective
    return loss, 2.0 * (X_star - solution.x)


@estimator_hyperparameters
class SPOPlus(LinearCostModel):
    """Linear c_hat = Theta z trained on the SPO+ loss (Elmachtoub and Grigas, 2022).

    Minimizes (1/B) sum_{t in batch} SPO+(Theta z_t, c_t) + (lam/2)||Theta||_F^2 by
    mini-batch stochastic subgradient descent from Theta = 0 with step
    step_size / sqrt(k + 1) at step k (as the released code; docs/paper_notes.md). The subgradient of a
    batch is the mean over the batch of 2 (x*_t - x_tilde_t) z_t' plus lam Theta, where
    x_tilde_t solves the LP with 2 c_hat_t - c_t; the B oracle calls of a step are ONE
    batched `lp.solve`. X* is taken from the argument when given, else solved once from C.

    Cost columns: with ``cost_columns="non_slack"`` (default) Theta is 0 on the LP's slack
    columns (`slack_columns`: one column per row with a single nonzero entry) and learned on the
    others. This loses no decision (any cost has an equivalent one that is 0 on the slacks) and
    no SPO+ loss (the loss is invariant under c_hat + A'y), but it fixes the conditioning: the
    subgradient 2 (x* - x_tilde) carries the slacks' values, and the knapsack's budget slack (up
    to the budget, thousands with integer prices) dwarfs the items' (at most 1) while its cost
    acts on every item through the prices. SGD on every column of figure 6's knapsack ended
    0.03-0.4 from the optimal decisions where the items alone are learned almost exactly
    (docs/decisions/024-spo-plus-slack-costs.md). An LP without a full set of slacks (the
    shortest path) learns every column either way; ``"all"`` always does.

    Sampling: with ``n_epochs=None`` (default) each of the ``n_steps`` steps draws a batch
    of ``batch_size`` distinct samples uniformly; with ``n_epochs`` set, ``n_steps`` is
    ignored and the samples are visited in ``n_epochs`` reshuffled passes of consecutive
    batches (ceil(T / batch_size) steps a pass).

    Attributes:
        coef_: (n, d) final Theta.  loss_history_: (n_steps,) mean SPO+ loss of each batch
        before its step (without the regularization).  n_oracle_calls_: the number of
        batched `lp.solve` calls (one per step, plus one for X* when it was not given).
    """

    needs_costs: ClassVar[bool] = True
    # n_steps counts when n_epochs is None; both must be positive counts.
    _parameter_constraints: ClassVar[dict] = {"lam": [NON_NEGATIVE], "step_size": [POSITIVE],
                                              "batch_size": [POSITIVE_INT], "n_steps": [POSITIVE_INT],
                                              "n_epochs": [None, POSITIVE_INT],
                                              "cost_columns": [StrOptions(set(SPO_COST_COLUMNS))]}

    lam: float = 1e-3
    step_size: float = 0.1
    batch_size: int = 5
    n_steps: int = 2000
    n_epochs: int | None = None
    random_state: int = 0
    cost_columns: str = "non_slack"

    def _batches(self, n_samples: int, rng: np.random.Generator):
        """Index arrays of the mini-batches in step order."""
        size = min(int(self.batch_size), n_samples)
        if self.n_epochs is None:
            for _ in range(int(self.n_steps)):
                yield rng.choice(n_samples, size=size, replace=False)
            return
        for _ in range(int(self.n_epochs)):
            order = rng.permutation(n_samples)
            for start in range(0, n_samples, size):
                yield order[start:start + size]

    def fit(self, Z, X_star=None, *, A=None, b=None, lp: StandardFormLP | None = None, basis=None, C=None):
        """Fit on features Z (T, d), true costs C (T, n) and the LPs (lp or A, b); returns self."""
        _fit_spo_plus([self], Z, X_star, resolve_lp(A, b, lp), C)
        if getattr(self, "fit_error_", None) is not None:
            raise self.fit_error_
        return self

    @classmethod
    def fit_many(cls, models: list["SPOPlus"], Z, X_star=None, *, lp: StandardFormLP, basis=None, C=None) -> list:
        """Fit several SPO+ models on the same samples at once (a tuning grid); returns them.

        Models that draw the same mini-batches (equal batch_size, n_steps, n_epochs and
        random_state; they may differ in lam and step_size) run in lockstep: each step's
        oracle calls of all of them are ONE batched `lp.solve` over the stacked batches.
        Every model ends exactly where its own `fit` would (the oracle is row by row); a
        model whose `fit` would raise (its iterate overflows) gets that error as `fit_error_`
        instead of coef_, and `tuning.grid_search` records it against its own cell.
        """
        _fit_spo_plus(models, Z, X_star, lp, C)
        return models


def _fit_spo_plus(models: list[SPOPlus], Z, X_star, lp: StandardFormLP, C) -> None:
    """Validate the inputs once and fit `models` (see `SPOPlus.fit_many`)."""
    for model in models:
        model.validate_hyperparameters()
    Z = check_features(Z)
    T = Z.shape[0]
    C = models[0]._require_costs(C, T, lp.n) if models else C
    if lp.A.ndim == 3 and lp.A.shape[0] != T:
        raise ValueError(f"the LP has {lp.A.shape[0]} per-sample constraint sets but Z has {T} samples")
    n_oracle_calls = 0
    if X_star is None:
        X_star = lp.solve(C).x
        n_oracle_calls = 1
    X_star = check_samples("X_star", X_star, T, lp.n)
    groups: dict[tuple, list] = {}
    for model in models:
        key = (int(model.batch_size), None if model.n_epochs is None else int(model.n_epochs),
               int(model.n_steps), repr(model.random_state), model.cost_columns)
        groups.setdefault(key, []).append(model)
    for group in groups.values():
        _spo_plus_lockstep(group, Z, C, X_star, lp, n_oracle_calls)


def _predict_batch(thetas: np.ndarray, Z_batch: np.ndarray) -> np.ndarray:
    """(k, B, n) costs Theta_i z_b of k models for a batch: one matrix product (k n, d) x (d, B)
    (einsum took 4-6x longer on SPO+'s 45 x 5 x 40 x 6 steps)."""
    k, n, d = thetas.shape
    return (thetas.reshape(k * n, d) @ Z_batch.T).reshape(k, n, len(Z_batch)).transpose(0, 2, 1)


def _spo_plus_lockstep(models: list[SPOPlus], Z, C, X_star, lp: StandardFormLP, n_oracle_calls: int) -> None:
    """Mini-batch SPO+ subgradient descent of models that share their batches, in lockstep.

    A model whose iterate overflows (a step size too large for its lam: the shrinkage factor
    1 - step * lam / sqrt(k + 1) far below -1) leaves the lockstep at that step with a
    `fit_error_` naming it; the others go on unchanged (the oracle is row by row).
    """
    T, d = Z.shape
    k = len(models)
    lams = np.array([float(m.lam) for m in models])[:, None, None]
    step_sizes = np.array([float(m.step_size) for m in models])[:, None, None]
    rng = np.random.default_rng(models[0].random_state)
    fixed_columns = ~learned_cost_columns(lp, models[0].cost_columns)  # Theta stays 0 there
    fixed_columns = fixed_columns if fixed_columns.any() else None
    thetas = np.zeros((k, lp.n, d))
    alive = np.ones(k, dtype=bool)
    diverged_at = np.full(k, -1)
    losses = []
    for step, idx in enumerate(models[0]._batches(T, rng)):
        Z_batch = Z[idx]
        B = len(idx)
        live = np.flatnonzero(alive)
        # While every model lives (nearly always), whole arrays instead of fancy-indexed copies.
        chosen = slice(None) if live.size == k else live
        with np.errstate(over="ignore", invalid="ignore"):
            # (live, B, n) oracle costs 2 c_hat - c, stacked model-major into one oracle call. A
            # model leaves when they are not finite: c_hat itself can be finite and still overflow
            # when doubled (figure 6 on U[0,1]: one such cell made the batched oracle raise for the
            # whole 45-cell grid, which was then fitted cell by cell).
            C_hat = _predict_batch(thetas[chosen], Z_batch)
            C_tilde = 2.0 * C_hat - C[idx]
            finite = np.isfinite(C_tilde).all(axis=(1, 2))
            if not finite.all():
                alive[live[~finite]], diverged_at[live[~finite]] = False, step
                live, C_tilde = live[finite], C_tilde[finite]
                chosen = live
            step_loss = np.full(k, np.nan)
            if live.size:
                stacked_lp = lp.subset(np.tile(idx, live.size))  # lp itself when the constraints are shared
                X_batch = X_star[idx][None].repeat(live.size, axis=0).reshape(live.size * B, lp.n)
                loss, grad_c = _spo_plus_terms(C_tilde.reshape(live.size * B, lp.n), X_batch, stacked_lp)
                step_loss[live] = loss.reshape(live.size, B).mean(axis=1)
                grad_c = grad_c.reshape(live.size, B, lp.n)
                if fixed_columns is not None:
                    grad_c[:, :, fixed_columns] = 0.0
                # (live, n, d) batch subgradients: one small matrix product per model.
                grad = np.matmul(grad_c.transpose(0, 2, 1), Z_batch) / B + lams[chosen] * thetas[chosen]
                thetas[chosen] -= step_sizes[chosen] / math.sqrt(step + 1) * grad
        losses.append(step_loss)
    history = np.asarray(losses).reshape(-1, k)
    for i, model in enumerate(models):
        model.__dict__.pop("fit_error_", None)
        if diverged_at[i] >= 0 or not np.isfinite(thetas[i]).all():
            model.fit_error_ = FloatingPointError(
                f"SPO+ diverged at step {diverged_at[i] if diverged_at[i] >= 0 else len(history) - 1} "
                f"of {len(history)} (lam={model.lam}, step_size="
                f"{model.step_size}: the iterate overflowed; a smaller step size or lam keeps it finite)")
            continue
        model.coef_ = thetas[i]
        model.n_features_in_ = d
        model.loss_history_ = history[:, i].copy()
        model.n_oracle_calls_ = n_oracle_calls + len(history)

