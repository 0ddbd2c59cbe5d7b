"""The inverse pipelines' parameters (``inverse:`` and ``inverse_example:`` in
conf/*/parameters_inverse.yml), typed.

Kedro builds `InverseParams` from ``params:inverse`` before any node runs (the nodes' type
hints ask for it), so a mistyped key (``inverse.model.lamda``), a lambda that is not a positive
number, a formulation or an ``on_invalid`` mode that does not exist, or fewer than two folds
stop the run before the input tables are read, with a message that names the parameter (and,
for an unknown key, the nearest valid one). Before, such values failed inside `tune_lambda`,
after validation, with messages such as ``could not convert string to float: 'abc'``.
"""

from __future__ import annotations

import inspect
import math
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, StrictBool, StrictInt, field_validator, model_validator

from mom_pipeline.experiments.spec import SpecError, StrictModel
from mom_pipeline.inverse import make_example_dataset
from mom_pipeline.inverse.tables import OUTLIER_THRESHOLD
from mom_pipeline.methods.mom import FORMULATIONS
from mom_pipeline.methods.mom_dual import threads_of
from mom_pipeline.methods.mom_solve import SOLVERS

PositiveNumber = Annotated[float, Field(gt=0, allow_inf_nan=False)]


def auto_or_positive(value, name: str):
    """A lambda parameter: "auto" or a positive number (one message instead of pydantic's
    two, one per branch of the union)."""
    if value == "auto":
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not math.isfinite(number) or number <= 0:
        raise SpecError(f"{name} must be 'auto' (chosen by validation) or a positive number; got {value!r}")
    return number


class InverseModelParams(StrictModel):
    """MOM's hyperparameters (`methods.mom.MOM`); lam is "auto" (chosen by validation on
    held-out observations, `InverseTuningParams`) or a number that fixes it."""

    where: ClassVar[str] = "inverse.model"

    formulation: Literal[FORMULATIONS] = "dual"
    lam: Literal["auto"] | PositiveNumber = "auto"
    solver: Literal[SOLVERS] = "auto"
    radius: PositiveNumber | None = None
    tol: PositiveNumber = 1e-8
    n_jobs: StrictInt | None = -1

    @field_validator("lam", mode="before")
    @classmethod
    def _auto_or_positive(cls, value):
        return auto_or_positive(value, f"{cls.where}.lam")

    @field_validator("n_jobs")
    @classmethod
    def _threads(cls, value):
        try:
            threads_of(value)  # MOM's own rule for n_jobs
        except ValueError as error:
            raise SpecError(f"inverse.model.{error}") from error
        return value

    def estimator_params(self) -> dict[str, Any]:
        """MOM's keyword arguments other than lam."""
        return self.model_dump(exclude={"lam"})


class InverseTuningParams(StrictModel):
    """The lambda grid and the K-fold split that chooses lambda from held-out observations."""

    where: ClassVar[str] = "inverse.tuning"

    lambdas: Annotated[tuple[PositiveNumber, ...], Field(min_length=1)] = (
        1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)
    n_folds: Annotated[StrictInt, Field(ge=2)] = 4
    seed: Annotated[StrictInt, Field(ge=0)] = 0


class InverseParams(StrictModel):
    """Everything under ``inverse:`` (meaning of each key: conf/base/parameters_inverse.yml)."""

    where: ClassVar[str] = "inverse"

    add_intercept: StrictBool = True
    feature_columns: tuple[str, ...] | None = None
    decision_columns: tuple[str, ...] | None = None
    on_invalid: Literal["report", "raise"] = "report"
    prescribe_on_invalid: Literal["raise", "report"] = "raise"
    outlier_threshold: PositiveNumber | None = OUTLIER_THRESHOLD
    drop_implied: StrictBool = False
    model: InverseModelParams = InverseModelParams()
    tuning: InverseTuningParams = InverseTuningParams()

    def table_options(self) -> dict[str, Any]:
        """The keyword arguments of `validate_inverse_problem` (None: its default)."""
        options = dict(add_intercept=self.add_intercept, on_invalid=self.on_invalid, drop_implied=self.drop_implied,
                       feature_columns=self.feature_columns, decision_columns=self.decision_columns)
        options = {key: list(value) if isinstance(value, tuple) else value
                   for key, value in options.items() if value is not None}
        return {**options, "outlier_threshold": self.outlier_threshold}  # None: no check

    @property
    def lambdas(self) -> list[float]:
        """The lambdas to score on held-out observations: the grid, or the fixed value."""
        lam = self.model.lam
        return list(self.tuning.lambdas) if lam == "auto" else [float(lam)]

    @property
    def tuned(self) -> bool:
        return self.model.lam == "auto"


# The example's defaults are the generator's own (one place to change them).
_EXAMPLE_DEFAULTS = {name: parameter.default
                     for name, parameter in inspect.signature(make_example_dataset).parameters.items()}


class InverseExampleParams(StrictModel):
    """The shipped example's size and seed (``inverse_example:``; `inverse.example.make_example_dataset`)."""

    where: ClassVar[str] = "inverse_example"

    n_observations: Annotated[StrictInt, Field(ge=1)] = _EXAMPLE_DEFAULTS["n_observations"]
    grid: tuple[Annotated[StrictInt, Field(ge=1)], Annotated[StrictInt, Field(ge=1)]] = _EXAMPLE_DEFAULTS["grid"]
    n_features: Annotated[StrictInt, Field(ge=1)] = _EXAMPLE_DEFAULTS["n_features"]
    n_new: Annotated[StrictInt, Field(ge=0)] = _EXAMPLE_DEFAULTS["n_new"]
    seed: Annotated[StrictInt, Field(ge=0)] = _EXAMPLE_DEFAULTS["seed"]
    noise: Annotated[float, Field(ge=0, lt=1)] = _EXAMPLE_DEFAULTS["noise"]

    @model_validator(mode="after")
    def _two_nodes(self):
        if self.grid[0] * self.grid[1] < 2:
            raise SpecError(f"inverse_example.grid must have at least 2 nodes (a route from one corner to the "
                            f"other); got {list(self.grid)}")
        return self
