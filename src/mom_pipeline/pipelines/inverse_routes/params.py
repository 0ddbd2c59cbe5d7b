"""The route pipelines' parameters (``inverse_routes:`` and ``inverse_routes_example:`` in
conf/base/parameters_inverse_routes.yml), typed: a mistyped key, a cost model or solver that
does not exist, a lambda that is not positive or fewer than two folds stop the run before any
file is read, naming the parameter."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, StrictBool, StrictInt, field_validator

from mom_pipeline.experiments.spec import StrictModel
from mom_pipeline.networks.fitting import COST_MODELS
from mom_pipeline.pipelines.inverse.params import auto_or_positive

PositiveNumber = Annotated[float, Field(gt=0, allow_inf_nan=False)]
ROUTE_SOLVERS = ("auto", "cvxpy")  # RouteMOM's solver policy (methods/route_mom.py)


class RouteModelParams(StrictModel):
    """RouteMOM and its cost model; lam "auto" is chosen from held-out routes (`RouteTuningParams`)."""

    where: ClassVar[str] = "inverse_routes.model"

    cost_model: Literal[COST_MODELS] = "per_arc"
    arc_features: tuple[str, ...] = ("free_flow_time",)
    lam: Literal["auto"] | PositiveNumber = "auto"
    solver: Literal[ROUTE_SOLVERS] = "auto"
    tol: PositiveNumber = 1e-6

    @field_validator("lam", mode="before")
    @classmethod
    def _auto_or_positive(cls, value):
        return auto_or_positive(value, f"{cls.where}.lam")

    def estimator_params(self) -> dict:
        return {"solver": self.solver, "tol": self.tol}


class RouteTuningParams(StrictModel):
    where: ClassVar[str] = "inverse_routes.tuning"

    lambdas: Annotated[tuple[PositiveNumber, ...], Field(min_length=1)] = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)
    n_folds: Annotated[StrictInt, Field(ge=2)] = 4
    seed: Annotated[StrictInt, Field(ge=0)] = 0


class InverseRoutesParams(StrictModel):
    """Everything under ``inverse_routes:`` (meaning of each key: conf/base/parameters_inverse_routes.yml)."""

    where: ClassVar[str] = "inverse_routes"

    network_file: str = "data/01_raw/inverse_routes/network_net.tntp"
    first_thru_node: Annotated[StrictInt, Field(ge=0)] = 1
    add_intercept: StrictBool = True
    feature_columns: tuple[str, ...] | None = None
    on_invalid: Literal["report", "raise"] = "report"
    model: RouteModelParams = RouteModelParams()
    tuning: RouteTuningParams = RouteTuningParams()

    @property
    def lambdas(self) -> list[float]:
        lam = self.model.lam
        return list(self.tuning.lambdas) if lam == "auto" else [float(lam)]

    def fit_options(self) -> dict:
        """The keyword arguments of `networks.fitting.fit_route_model` / `route_validation_curve`."""
        return {"cost_model": self.model.cost_model, "arc_features": self.model.arc_features,
                "estimator_params": self.model.estimator_params()}


class InverseRoutesExampleParams(StrictModel):
    """The example's data (``inverse_routes_example:``; `networks.generate.generate_routes`); its fit
    has the keys of ``inverse_routes:`` under ``inverse_routes_example_fit:``."""

    where: ClassVar[str] = "inverse_routes_example"

    network: str = "auto"  # auto | SiouxFalls | Anaheim | Berlin-Friedrichshain | grid | a _net.tntp path
    grid: tuple[Annotated[StrictInt, Field(ge=2)], Annotated[StrictInt, Field(ge=2)]] = (4, 4)
    n_observations: Annotated[StrictInt, Field(ge=2)] = 500
    n_new: Annotated[StrictInt, Field(ge=0)] = 100
    noise: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0
    peak_volume_capacity: PositiveNumber = 2.5
    seed: Annotated[StrictInt, Field(ge=0)] = 0
