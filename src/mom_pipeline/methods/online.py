"""Online algorithms of the paper: online MOM (Algorithm 2), the optimality-driven perceptron
(Algorithm 3), follow-the-regularized-leader MOM (Algorithm 4, in `ftrl.py`), and the suboptimality-loss
online gradient descent of the inverse-optimization literature (Barmann et al. 2018, Chen and
Kilinc-Karzan 2020; the paper's section "Discussions"), which suffers from scale inconsistency.

Every class processes the T training samples in the given order, one pass:

* at step t it predicts c_hat_t = Theta_t z_t and plays x_t, an optimal vertex of the LP with
  c_hat_t (BEFORE the update), then updates Theta_t -> Theta_{t+1} from sample t (`OnlineMOM`'s
  ``look_ahead=True`` swaps the two, as the authors' released notebook did: not an online
  algorithm, offered only to explain the published figure 5);
* it trains from the observed optimal solutions X* (and their bases) alone; the true costs C,
  when given to `fit`, are only used to report the regret of the played decisions.

State after `fit` (shapes with T samples, n variables, d features):

* ``coef_`` (n, d): the Theta used by `predict_cost`: the last iterate Theta_{T+1}, or the
  average of Theta_1..Theta_{T+1} when ``use_average=True``;
* ``final_coef_`` (n, d) = Theta_{T+1}; ``averaged_coef_`` (n, d) = mean of Theta_1..Theta_{T+1}
  (the paper's bounds hold for an iterate drawn uniformly from that set; the hinge loss being
  convex, Jensen's inequality carries them over to this deterministic average);
* ``coef_path_norms_`` (T + 1,): ||Theta_t||_F for t = 1..T+1;
* ``decisions_`` (T, n): the x_t played; ``mistakes_`` (T,): cumulative count of steps with
  x_t != x*_t;
* ``regret_`` (T,): c_t'(x_t - x*_t) (NaN without C), ``cumulative_regret_`` (T,);
  ``relative_regret_`` (T,): the regret divided by a per-sample scale (``regret_scale`` in fit:
  "l2" = ||c_t||_2, the paper's knapsack metric and the default; "objective" = |c_t'x*_t|, the
  paper's shortest-path metric), ``cumulative_relative_regret_`` (T,): the paper's "cumulative
  regret" (cumulative sum of the per-step relative loss, figure 5).

The same classes serve as offline baselines: MOM-OGD in figures 1-3 is `OnlineMOM` run once
over the training set, then `predict_cost` with the final (or averaged) Theta.

Where the Theta path does not depend on the played decisions (online MOM, perceptron, FTRL:
their updates use only x*_t's basis), the T LPs are solved after the pass in ONE batched call
(`lp.solve` on the (T, n) predicted costs), which gives exactly the per-step decisions of the
algorithm. The suboptimality OGD uses x_t in its update and solves one LP per step.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from tqdm.auto import tqdm

from ..lp import StandardFormLP, reduced_cost_operator
from .base import POSITIVE, LinearCostModel, StrOptions, check_features, estimator_hyperparameters, resolve_lp

STEP_SCHEDULES = ("constant", "decreasing")
PERCEPTRON_UPDATES = ("sequential", "simultaneous")
REGRET_SCALES = ("l2", "objective")
INITS = ("zero", "random")
# Two vertices are the same decision when they agree to this tolerance (relative to max(1, |x*|)).
SAME_DECISION_TOL = 1e-7


def step_sizes(step_size: float, schedule: str, n_steps: int) -> np.ndarray:
    """(n_steps,) step sizes: "constant" eta / sqrt(T) (the released code, and the choice of the
    paper's online proposition (prop:sgd), which needs the horizon T), "decreasing" eta / sqrt(t)
    for t = 1..T (anytime, no horizon needed)."""
    if schedule not in STEP_SCHEDULES:
        raise ValueError(f"step_schedule must be one of {STEP_SCHEDULES}; got {schedule!r}")
    if not (np.isfinite(step_size) and step_size > 0):
        raise ValueError(f"step_size must be a positive number; got {step_size!r}")
    if schedule == "constant":
        return np.full(n_steps, step_size / np.sqrt(n_steps))
    return step_size / np.sqrt(np.arange(1, n_steps + 1))


def project_frobenius(theta: np.ndarray, radius: float | None) -> np.ndarray:
    """Euclidean projection of theta onto the ball {||Theta||_F <= radius} (None: no projection)."""
    if radius is None:
        return theta
    norm = np.linalg.norm(theta)
    return theta * (radius / norm) if norm > radius else theta


def hinge_loss(M_t: np.ndarray, z: np.ndarray, theta: np.ndarray) -> float:
    """MOM's margin violation of one sample, l(Theta) = sum_k max(0, 1 - (M_t Theta z)_k).

    M_t: (n - m, n) reduced-cost operator of x*_t's basis; z: (d,); theta: (n, d)."""
    return float(np.maximum(0.0, 1.0 - M_t @ (theta @ z)).sum())


def hinge_subgradient(M_t: np.ndarray, z: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """A subgradient (n, d) of `hinge_loss` at theta: -sum over violated rows k of M_t[k]' z'.

    Rows with margin exactly 1 (kinks) contribute 0, a valid element of the subdifferential."""
    violated = M_t @ (theta @ z) < 1.0
    return -np.outer(M_t[violated].sum(axis=0), z)


def decision_irrelevant_costs(A) -> np.ndarray:
    """An orthonormal basis (r, n) of the costs c in range(A_t') for every t: c'x = y_t'b_t is
    constant on every feasible set, so such costs change no decision of any LP in the family.

    A: (m, n) shared (the result spans range(A')) or (T, m, n) per sample (the intersection)."""
    A = np.asarray(A, dtype=float)
    stack = A[None] if A.ndim == 2 else A
    n = stack.shape[-1]
    # c is in every range(A_t') iff every null-space projector I - A_t^+ A_t annihilates it:
    # the right singular vectors of the stacked (T n, n) projectors with singular value 0.
    null_projectors = np.eye(n) - np.linalg.pinv(stack) @ stack
    _, singular, vt = np.linalg.svd(null_projectors.reshape(-1, n), full_matrices=False)
    return vt[singular <= 1e-9 * max(1.0, singular.max())]


class _IteratePath:
    """Running record of the iterates Theta_1..Theta_{T+1} of one pass: the predicted costs
    Theta_t z_t (T, n), the norms ||Theta_t||_F (T + 1,) and their running sum (n, d)."""

    def __init__(self, theta_1: np.ndarray, n_steps: int):
        self.predicted = np.empty((n_steps, theta_1.shape[0]))
        self.norms = np.empty(n_steps + 1)
        self.norms[0] = np.linalg.norm(theta_1)
        self.total = theta_1.copy()
        self.final = theta_1

    def predict(self, t: int, theta: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Record and return c_hat_t = Theta_t z_t (t 0-based)."""
        self.predicted[t] = theta @ z
        return self.predicted[t]

    def push(self, t: int, theta: np.ndarray) -> None:
        """Record Theta_{t+1}, the iterate after step t (0-based)."""
        self.total += theta
        self.norms[t + 1] = np.linalg.norm(theta)
        self.final = theta

    @property
    def average(self) -> np.ndarray:
        return self.total / self.norms.size

    @classmethod
    def recorded(cls, predicted: np.ndarray, norms: np.ndarray, total: np.ndarray, final: np.ndarray) -> "_IteratePath":
        """The record of a pass run elsewhere (`OnlineMOM.fit_many`): its (T, n) predictions, (T + 1,)
        norms, the sum of its T + 1 iterates and its last iterate."""
        path = cls.__new__(cls)
        path.predicted, path.norms, path.total, path.final = predicted, norms, total, final
        return path


class _OnlinePass(LinearCostModel):
    """Shared input handling and bookkeeping of the online algorithms (not a method itself)."""

    needs_costs: ClassVar[bool] = False

    def _prepare(self, Z, X_star, A, b, lp, basis, C, regret_scale):
        """Validated (Z, X*, lp, basis, M, C) with M (T, n - m, n) built in one batched call;
        also checks the hyperparameters common to the passes, before any work."""
        self._check_pass_hyperparameters(regret_scale)
        lp = resolve_lp(A, b, lp)
        Z = check_features(Z)
        T = Z.shape[0]
        if X_star is None:
            raise ValueError(f"{type(self).__name__} trains from the observed optimal solutions: pass X_star (T, n)")
        X_star = np.asarray(X_star, dtype=float)
        if X_star.shape != (T, lp.n):
            raise ValueError(f"X_star must be ({T}, {lp.n}); got shape {X_star.shape}")
        if lp.A.ndim == 3 and lp.A.shape[0] != T:
            raise ValueError(f"the LP has {lp.A.shape[0]} per-sample constraint sets but Z has {T} samples")
        basis = lp.basis_from_solution(X_star) if basis is None else np.asarray(basis, dtype=np.int64)
        if basis.shape != (T, lp.m):
            raise ValueError(f"basis must be ({T}, {lp.m}); got shape {basis.shape}")
        M, _ = reduced_cost_operator(lp.A, basis)
        if C is not None:
            C = self._require_costs(C, T, lp.n)
        return Z, X_star, lp, basis, M, C

    def _check_pass_hyperparameters(self, regret_scale: str) -> None:
        if regret_scale not in REGRET_SCALES:
            raise ValueError(f"regret_scale must be one of {REGRET_SCALES}; got {regret_scale!r}")
        self.validate_hyperparameters()  # what `fit` checks first; fit_many's models are checked here

    def _progress(self, n_steps: int):
        return tqdm(range(n_steps), desc=type(self).__name__, disable=not getattr(self, "progress", False))

    def _record(self, path: _IteratePath, decisions: np.ndarray | None, X_star: np.ndarray, lp: StandardFormLP,
                C: np.ndarray | None, regret_scale: str) -> None:
        """Store the learned state; solve the T LPs in one batch when `decisions` is None."""
        if decisions is None:
            decisions = lp.solve(path.predicted).x
        self.predicted_costs_ = path.predicted
        self.decisions_ = decisions
        scale = np.maximum(1.0, np.abs(X_star).max(axis=1))
        wrong = np.abs(decisions - X_star).max(axis=1) > SAME_DECISION_TOL * scale
        self.mistakes_ = np.cumsum(wrong)
        self.coef_path_norms_ = path.norms
        self.final_coef_ = path.final
        self.averaged_coef_ = path.average
        self.n_features_in_ = path.final.shape[1]
        self.coef_ = path.average if getattr(self, "use_average", False) else path.final
        T = X_star.shape[0]
        if C is None:
            self.regret_ = np.full(T, np.nan)
            self.relative_regret_ = np.full(T, np.nan)
        else:
            self.regret_ = np.einsum("tn,tn->t", C, decisions - X_star)
            if regret_scale == "l2":
                denominator = np.linalg.norm(C, axis=1)
            else:
                denominator = np.abs(np.einsum("tn,tn->t", C, X_star))
            # A zero scale (c_t = 0 or c_t'x*_t = 0) has zero regret too: report 0, not NaN.
            self.relative_regret_ = np.divide(self.regret_, denominator, out=np.zeros(T), where=denominator > 0)
        self.cumulative_regret_ = np.cumsum(self.regret_)
        self.cumulative_relative_regret_ = np.cumsum(self.relative_regret_)


@estimator_hyperparameters
class OnlineMOM(_OnlinePass):
    """Online MOM, the paper's Algorithm 2 (projected online subgradient descent on the hinge
    loss l(Theta) = sum_k max(0, 1 - (M_t Theta z_t)_k)); also the offline baseline MOM-OGD.

    Theta_1 = 0; Theta_{t+1} = Proj_K(Theta_t - eta_t g_t), g_t = `hinge_subgradient`,
    K = {||Theta||_F <= radius} (radius None: no projection).

    Args:
        step_size: eta.
        radius: the radius of K (the paper tunes it in [0.8, 2.0] ||V||_F); None = R^{n x d}.
        step_schedule: "constant" (default) eta / sqrt(T), the choice of the paper's guarantee
            and of the released code (one pass has a known horizon, the number of samples);
            "decreasing" eta / sqrt(t).
        look_ahead: False (default): Algorithm 2, step t plays Theta_t. True: the order of the
            authors' released notebook (figure 5): the update from sample t's own basis comes
            first and step t plays Theta_{t+1}, so the decision it is scored on has seen that
            step's answer. Only ``predicted_costs_``, the decisions and the regret change: the
            iterates Theta_1..Theta_{T+1} (and so ``coef_``) are the same either way.
        use_average: predict with the mean of Theta_1..Theta_{T+1} instead of the last iterate.
        progress: show a tqdm progress bar.
    """

    _parameter_constraints: ClassVar[dict] = {"step_size": [POSITIVE], "radius": [None, POSITIVE],
                                              "step_schedule": [StrOptions(set(STEP_SCHEDULES))],
                                              "look_ahead": ["boolean"]}

    step_size: float = 0.1
    radius: float | None = None
    step_schedule: str = "constant"
    look_ahead: bool = False
    use_average: bool = False
    progress: bool = False

    def fit(self, Z, X_star=None, *, A=None, b=None, lp=None, basis=None, C=None, regret_scale: str = "l2"):
        return type(self).fit_many([self], Z, X_star, A=A, b=b, lp=lp, basis=basis, C=C,
                                   regret_scale=regret_scale)[0]

    @classmethod
    def fit_many(cls, models: list["OnlineMOM"], Z, X_star=None, *, A=None, b=None, lp=None, basis=None, C=None,
                 regret_scale: str = "l2") -> list:
        """Run the passes of several models over the same samples in lockstep (a tuning grid of
        step sizes and radii); returns them, each as its own `fit` leaves it.

        The passes share everything but their iterates: at step t every model's prediction,
        margins and update are one array operation over the stacked (k, n, d) iterates, instead
        of k Python passes of T small steps each (MOM-OGD's 35-cell grid: 27,000 steps of
        about 20 microseconds). Each model's arithmetic is its own; the stacking only batches it.
        """
        if not models:
            return models
        for model in models:
            model._check_pass_hyperparameters(regret_scale)
        Z, X_star, lp, basis, M, C = models[0]._prepare(Z, X_star, A, b, lp, basis, C, regret_scale)
        T, d = Z.shape
        k = len(models)
        etas = np.stack([step_sizes(m.step_size, m.step_schedule, T) for m in models], axis=1)  # (T, k)
        radii = np.array([np.inf if m.radius is None else float(m.radius) for m in models])
        thetas = np.zeros((k, lp.n, d))
        predicted = np.empty((k, T, lp.n))
        norms = np.zeros((k, T + 1))
        total = np.zeros_like(thetas)  # Theta_1 = 0 adds nothing
        look_ahead = np.array([bool(m.look_ahead) for m in models])
        for t in models[0]._progress(T):
            z = Z[t]
            current = thetas @ z  # c_hat_t = Theta_t z_t: Algorithm 2 plays it, the update needs it
            predicted[:, t] = current
            violated = (current @ M[t].T < 1.0).astype(float)  # (k, n - m)
            # theta - eta * subgradient, the subgradient being -sum_violated M_t[k]' z'.
            thetas += (etas[t][:, None] * (violated @ M[t]))[:, :, None] * z
            norm = np.sqrt(np.einsum("knd,knd->k", thetas, thetas))
            outside = norm > radii  # projected back onto the ball {||Theta||_F <= radius}
            if outside.any():
                thetas[outside] *= (radii[outside] / norm[outside])[:, None, None]
                norm[outside] = radii[outside]
            norms[:, t + 1] = norm
            total += thetas
            if look_ahead.any():
                predicted[look_ahead, t] = thetas[look_ahead] @ z  # Theta_{t+1} z_t
        for i, model in enumerate(models):
            path = _IteratePath.recorded(predicted[i], norms[i], total[i], thetas[i].copy())
            model._record(path, None, X_star, lp, C, regret_scale)
        return models


@estimator_hyperparameters
class Perceptron(_OnlinePass):
    """The optimality-driven perceptron, the paper's Algorithm 3 (separable data).

    Theta_1 = 0. At step t, for each non-basic column i of x*_t's basis in increasing order, with
    the temporary Theta (already updated for the previous i of the same step): if the reduced
    cost r_i = (M_t Theta z_t)_k <= threshold, then row i of Theta += z_t' and the rows of the
    basic set -= (A_B^{-1} A_{:,i}) z_t' -- together Theta += M_t[k]' z_t', a step along minus
    the hinge subgradient of that single row. (The paper prints "A_B^{-1} A_t z_t", whose shapes
    do not match; this is the reading that does.)

    Exact and sequential over i, but cheap: an update of row k changes every reduced cost by
    (M_t M_t')[:, k] ||z_t||^2, so the inner loop is over scalars.

    Args:
        threshold: the margin at or below which a row is updated (1/2 in the paper's text; the
            authors' released notebook that drew figure 5 used 0). The comparison is the
            text's r <= threshold: from Theta_1 = 0 every reduced cost is exactly 0, so with a
            strict r < 0 nothing would ever be updated.
        update_rule: "sequential" (default, the text's Algorithm 3: each row's test sees the
            updates of the rows before it in the same step) or "simultaneous" (the released
            notebook: the reduced costs are computed once per step, and every non-basic row at
            or below the threshold is updated from those same values).
        use_average: predict with the mean of Theta_1..Theta_{T+1}.
        progress: show a tqdm progress bar.
    After fit, besides the common state: ``n_updates_`` (T,) the number of rows updated at each step.
    """

    _parameter_constraints: ClassVar[dict] = {"update_rule": [StrOptions(set(PERCEPTRON_UPDATES))]}

    threshold: float = 0.5
    update_rule: str = "sequential"
    use_average: bool = False
    progress: bool = False

    def _rows_to_update(self, reduced: np.ndarray, coupling: np.ndarray) -> np.ndarray:
        """(n - m,) 0/1: the non-basic rows updated at one step, from the reduced costs of
        Theta_t (`reduced`) and the change of every reduced cost per update of each row (`coupling`)."""
        if self.update_rule == "simultaneous":
            return (reduced <= self.threshold).astype(float)
        reduced = reduced.copy()
        updated = np.zeros(reduced.size)
        # Rows of M_t follow the sorted non-basic indices: the algorithm's loop over i.
        for k in range(reduced.size):
            if reduced[k] <= self.threshold:
                updated[k] = 1.0
                reduced += coupling[:, k]
        return updated

    def fit(self, Z, X_star=None, *, A=None, b=None, lp=None, basis=None, C=None, regret_scale: str = "l2"):
        Z, X_star, lp, basis, M, C = self._prepare(Z, X_star, A, b, lp, basis, C, regret_scale)
        T, d = Z.shape
        theta = np.zeros((lp.n, d))
        path = _IteratePath(theta, T)
        n_updates = np.zeros(T, dtype=np.int64)
        for t in self._progress(T):
            z = Z[t]
            M_t = M[t]
            reduced = M_t @ path.predict(t, theta, z)
            updated = self._rows_to_update(reduced, (M_t @ M_t.T) * (z @ z))
            if updated.any():
                theta = theta + np.outer(updated @ M_t, z)
                n_updates[t] = int(updated.sum())
            path.push(t, theta)
        self.n_updates_ = n_updates
        self._record(path, None, X_star, lp, C, regret_scale)
        return self


@estimator_hyperparameters
class SuboptimalityOGD(_OnlinePass):
    """Online gradient descent on the suboptimality loss l_sub(Theta) = <Theta, (x*_t - x_t) z_t'>
    (Barmann et al. 2018; Chen and Kilinc-Karzan 2020), the paper's foil in "Discussions":
    Theta_{t+1} = Proj_K(Theta_t - eta_t (x*_t - x_t) z_t'), x_t optimal for Theta_t z_t.

    Since <Theta_t, (x*_t - x_t) z_t'> = c_hat_t'(x*_t - x_t) >= 0, every step shrinks ||Theta||
    to first order: with K containing 0 the iterates collapse towards 0 (scale inconsistency) and
    the regret grows linearly. ``coef_path_norms_`` shows the collapse.

    Exactly, ||Theta_{t+1}||^2 = ||Theta_t||^2 - 2 eta l_sub,t + eta^2 ||g_t||^2 (no projection):
    the norm settles where l_sub,t ~ eta ||g_t||^2 / 2. Measured on knapsack (T = 1000): on
    inseparable data l_sub stays positive and Theta collapses (100 -> ~3 with eta = 10 / sqrt(t));
    on separable data (c = Theta* z) the direction is learned, l_sub -> 0 and the norm does not
    collapse; there the regret is not linear either (this does not reproduce the paper's remark).

    Args:
        step_size, radius, step_schedule: as in `OnlineMOM`.
        init: "random" (default): Theta_1 Gaussian with ||Theta_1||_F = init_scale, drawn with
            `random_state` orthogonal to the decision-irrelevant costs (see `_initial_theta`), so
            that the collapse from a non-trivial start is visible; "zero":
            Theta_1 = 0 as in the MOM algorithms (then c_hat_1 = 0, every feasible vertex is
            optimal and the LP oracle's deterministic choice decides the first step).
        init_scale: ||Theta_1||_F with init="random".
        random_state: seed of the random initialization.
        use_average, progress: as in `OnlineMOM`.
    """

    _parameter_constraints: ClassVar[dict] = {**OnlineMOM._parameter_constraints, "init": [StrOptions(set(INITS))],
                                              "init_scale": [POSITIVE]}

    step_size: float = 0.1
    radius: float | None = None
    step_schedule: str = "constant"
    init: str = "random"
    init_scale: float = 1.0
    random_state: int | None = 0
    use_average: bool = False
    progress: bool = False

    def _initial_theta(self, lp: StandardFormLP, d: int) -> np.ndarray:
        """Theta_1 (n, d); a random one is drawn orthogonal to the costs that no LP of the family
        can tell apart (`decision_irrelevant_costs`): those change no decision and no update
        touches them (x*_t - x_t lies in null(A_t)), so a random component there would stay
        forever and hide the collapse of the part that matters."""
        if self.init == "zero":
            return np.zeros((lp.n, d))
        theta = np.random.default_rng(self.random_state).standard_normal((lp.n, d))
        irrelevant = decision_irrelevant_costs(lp.A)
        theta = theta - irrelevant.T @ (irrelevant @ theta)
        return theta * (self.init_scale / np.linalg.norm(theta))

    def fit(self, Z, X_star=None, *, A=None, b=None, lp=None, basis=None, C=None, regret_scale: str = "l2"):
        # The bases are not used by the update, but _prepare validates them like everywhere else.
        Z, X_star, lp, basis, M, C = self._prepare(Z, X_star, A, b, lp, basis, C, regret_scale)
        T, d = Z.shape
        etas = step_sizes(self.step_size, self.step_schedule, T)
        theta = project_frobenius(self._initial_theta(lp, d), self.radius)
        path = _IteratePath(theta, T)
        decisions = np.empty((T, lp.n))
        for t in self._progress(T):
            z = Z[t]
            # One LP per step: the update needs x_t (lp.subset is lp itself for shared constraints).
            decisions[t] = lp.subset([t]).solve(path.predict(t, theta, z)[None]).x[0]
            theta = project_frobenius(theta - etas[t] * np.outer(X_star[t] - decisions[t], z), self.radius)
            path.push(t, theta)
        self._record(path, decisions, X_star, lp, C, regret_scale)
        return self
