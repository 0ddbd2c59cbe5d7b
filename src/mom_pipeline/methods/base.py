"""The estimator interface shared by every method (scikit-learn conventions).

Hyperparameters are declared as annotated class fields under `estimator_hyperparameters`,
which writes the ``__init__`` that only stores them (scikit-learn's rule); learned state ends
with an underscore; ``fit`` returns self; ``get_params``/``set_params`` come from
scikit-learn's BaseEstimator, so a tuning grid is a plain dict of parameter lists.

Hyperparameter constraints are declared, as scikit-learn's own estimators do, in a class's
``_parameter_constraints`` ({name: [constraint, ...]}: `Interval`, `StrOptions`, None, a type;
`sklearn.utils._param_validation`), and checked in one place: `estimator_hyperparameters`
makes the class's ``fit`` call `validate_hyperparameters` first, whose error names
the parameter, the estimator and the value.

Every method predicts costs c_hat = f(z) (``predict_cost``, and ``predict`` for scikit-learn's
Pipeline and model selection); decisions come from solving the LP with the
predicted costs through the LP layer (`decide`). ``needs_costs`` says whether training
needs the true costs C (predict-then-optimize baselines) or only the observed optimal
solutions X* (every MOM variant, the perceptron: inverse LP works).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from numbers import Integral, Real
from typing import ClassVar, TypeVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError as SklearnNotFittedError
from sklearn.utils._param_validation import Interval, Options, StrOptions, validate_parameter_constraints

from ..checks import finite_samples
from ..lp import LPSolution, StandardFormLP

_Estimator = TypeVar("_Estimator", bound=type)


def estimator_hyperparameters(cls: _Estimator | None = None, *, keyword_only: bool = False):
    """Class decorator: the annotated class fields become the estimator's keyword hyperparameters.

    The generated ``__init__`` stores each argument unchanged under its own name, which is what
    scikit-learn's `get_params`, `set_params` and `clone` read through the ``__init__`` signature.
    BaseEstimator's repr is kept (``repr=False``) and estimators compare by identity (``eq=False``),
    as scikit-learn's do. Class-level constants that are not hyperparameters need ``ClassVar``.
    ``keyword_only=True`` on a base class puts its shared hyperparameters after a subclass's own
    in the signature, as keyword-only arguments. The class's own ``fit`` first checks the
    hyperparameters against ``_parameter_constraints`` (`validate_hyperparameters`).
    """
    def declare(klass: _Estimator) -> _Estimator:
        fit = klass.__dict__.get("fit")
        if fit is not None and not getattr(fit, "_validates_hyperparameters", False):
            klass.fit = _validating(fit)
        return dataclass(eq=False, repr=False, kw_only=keyword_only)(klass)

    return declare if cls is None else declare(cls)


def _validating(fit):
    """`fit` that checks the estimator's hyperparameters before anything else."""
    @functools.wraps(fit)
    def checked_fit(self, *args, **kwargs):
        validate_hyperparameters(self)
        return fit(self, *args, **kwargs)

    checked_fit._validates_hyperparameters = True
    return checked_fit


def validate_hyperparameters(estimator) -> None:
    """Check every hyperparameter of `estimator` against its class's `_parameter_constraints`
    (scikit-learn's `InvalidParameterError`, a ValueError naming the parameter, the estimator
    and the value); hyperparameters without a constraint are not checked."""
    validate_parameter_constraints(getattr(type(estimator), "_parameter_constraints", {}),
                                   estimator.get_params(deep=False), caller_name=type(estimator).__name__)


#: Constraints shared by many estimators (scikit-learn's `Interval`: the bounds and which are closed).
POSITIVE = Interval(Real, 0, np.inf, closed="neither")  # finite and > 0 (nan and inf refused)
NON_NEGATIVE = Interval(Real, 0, np.inf, closed="left")
POSITIVE_INT = Interval(Integral, 1, None, closed="left")
#: n_jobs: None (one thread), -1 (every core this process may use) or a positive count.
N_JOBS = [None, Options(Integral, {-1}), POSITIVE_INT]


class MissingCostsError(ValueError):
    """A method that needs the true costs C was asked to train from X* alone."""


class NotFittedError(SklearnNotFittedError):
    """predict_cost, predict or decide was called before fit (scikit-learn's NotFittedError, so
    `sklearn.utils.validation.check_is_fitted` and code that catches it see the same error)."""


def resolve_lp(A=None, b=None, lp: StandardFormLP | None = None) -> StandardFormLP:
    """The LP family from either `lp` or (A, b)."""
    if lp is not None:
        if A is not None or b is not None:
            raise ValueError("give either lp or (A, b), not both")
        return lp
    if A is None or b is None:
        raise ValueError("the constraints are needed: pass lp=StandardFormLP or A=..., b=...")
    return StandardFormLP(A=np.asarray(A, dtype=float), b=np.asarray(b, dtype=float))


def check_features(Z, n_samples: int | None = None, name: str = "Z") -> np.ndarray:
    """Z as a finite (T, d) float array with T >= 1; errors name the first bad sample."""
    return finite_samples(name, Z, n_samples=n_samples, min_samples=1, shape_hint=" (one row of features per sample)")


def check_samples(name: str, values, n_samples: int, n: int) -> np.ndarray:
    """`values` as a finite (n_samples, n) float array (costs C or solutions X*); errors name
    the first bad sample."""
    return finite_samples(name, values, n_samples=n_samples, n_columns=n, shape_hint=" to match Z and the LP")


class CostModel(BaseEstimator):
    """Base class: subclasses implement `fit` and `predict_cost`, and declare their
    hyperparameters' `_parameter_constraints`."""

    needs_costs: ClassVar[bool] = False
    _parameter_constraints: ClassVar[dict] = {}

    def validate_hyperparameters(self) -> None:
        """`validate_hyperparameters` of this estimator (what `fit` does first)."""
        validate_hyperparameters(self)

    def predict(self, Z) -> np.ndarray:
        """The predicted costs (T, n) for features Z (T, d): `predict_cost` under scikit-learn's
        name, so Pipeline and model selection can call it."""
        return self.predict_cost(Z)

    def fit(self, Z, X_star=None, *, A=None, b=None, lp: StandardFormLP | None = None, basis=None, C=None):
        raise NotImplementedError

    def predict_cost(self, Z) -> np.ndarray:
        """Predicted costs (T, n) for features Z (T, d)."""
        raise NotImplementedError

    def decide(self, Z, lp: StandardFormLP) -> LPSolution:
        """Decisions: solve the LP with the predicted costs (oracle when available).

        Raises FloatingPointError, naming the model, the sample and the column, when a predicted
        cost is not finite: a fit whose coefficients are finite but huge (a diverging step size)
        overflows on new contexts, and the LP layer's message about its input C would hide that."""
        with np.errstate(over="ignore", invalid="ignore"):  # said below, with the model's name
            costs = np.asarray(self.predict_cost(Z), dtype=float)
        bad = ~np.isfinite(costs)
        if bad.any():
            sample, column = (int(v) for v in np.argwhere(bad)[0])
            params = ", ".join(f"{key}={value!r}" for key, value in sorted(self.get_params().items()))
            raise FloatingPointError(
                f"{type(self).__name__}({params}) predicted a non-finite cost ({costs[sample, column]}) for sample "
                f"{sample}, column {column}, on {int(bad.any(axis=1).sum())} of {len(costs)} samples: its fit "
                "diverged or overflowed (a smaller step size, or another lam, keeps it finite)")
        return lp.solve(costs, need_basis=False)

    def _require_costs(self, C, n_samples: int, n: int) -> np.ndarray:
        if C is None:
            raise MissingCostsError(
                f"{type(self).__name__} needs the true costs C in training; with observed "
                "optimal solutions only (inverse LP) use MOM, its kernel and online variants, or the perceptron"
            )
        return check_samples("C", C, n_samples, n)

    def _check_fitted(self) -> None:
        if not hasattr(self, "coef_") and not hasattr(self, "model_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit first")


class LinearCostModel(CostModel):
    """A cost model c_hat = coef_ z (coef_: (n, d)); MOM, its online variants and the linear
    baselines share it."""

    def predict_cost(self, Z) -> np.ndarray:
        """c_hat = Theta z for every row of Z (T, d): (T, n)."""
        self._check_fitted()
        Z = check_features(Z)
        if Z.shape[1] != self.coef_.shape[1]:
            raise ValueError(f"Z has {Z.shape[1]} features but the model was fitted with {self.coef_.shape[1]}")
        return Z @ self.coef_.T
