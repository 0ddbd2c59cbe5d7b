"""Experiment specs: typed, strictly validated parameters and the per-trial seeding.

An experiment's parameters (``<figure>.experiment`` in conf/*/parameters_<pipeline>.yml) are
parsed once into an `ExperimentSpec`, a Pydantic model: Kedro validates every ``params:``
node input against its type hint before any node runs, so a typo (``trails``), a fraction
where an integer is meant (``trials=1.7``), an unknown estimator or hyperparameter, a
negative seed or an empty test set stops the run before any data is generated, with a
message that names the parameter (and, for an unknown key, the nearest valid one).
"""

from __future__ import annotations

import difflib
import inspect
import math
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, model_validator

from ..problems import GENERATORS

SWEEPABLE = ("degree", "alpha_bar", "eps_bar", "eta_bar", "n_train")
MODES = ("offline", "online")
METHOD_KEYS = ("estimator", "params", "grid", "radius_factors", "x_star_only", "tuning", "tuning_folds")
#: How a tuned method picks its grid cell (experiments/train.py): by the true costs on a validation
#: quarter, or (MOM from x* alone) by the held-out decisions it reproduces, never reading a cost.
TUNINGS = ("costs", "decisions")



class SpecError(ValueError):
    """An experiment's parameters are missing or invalid; the message names the key."""


def nearest(key: str, valid) -> str:
    """' (did you mean X?)' for the closest valid key, or ''."""
    match = difflib.get_close_matches(str(key), [str(v) for v in valid], n=1, cutoff=0.5)
    return f" (did you mean {match[0]!r}?)" if match else ""


def reject_unknown(values: Any, valid, where: str) -> None:
    """A SpecError naming the first key of `values` not in `valid` and its nearest valid key."""
    if not isinstance(values, dict):
        return
    for key in values:
        if key not in valid:
            raise SpecError(f"{where}: unknown parameter {key!r}{nearest(key, valid)}; valid: {sorted(valid)}")


class StrictModel(BaseModel):
    """Frozen, no unknown keys: an unknown key is named with the nearest valid one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    where: ClassVar[str] = "parameters"

    @model_validator(mode="before")
    @classmethod
    def _unknown_keys(cls, values):
        reject_unknown(values, cls.model_fields, cls.where)
        return values


class Sweep(StrictModel):
    where: ClassVar[str] = "experiment.sweep"
    param: Literal[SWEEPABLE]
    values: Annotated[tuple[StrictInt | float, ...], Field(min_length=1)]


class PlotSettings(StrictModel):
    """How the figure of an experiment is drawn (the tables always hold every metric).

    metric: ``relative_loss`` (default), the paper's ratio: c'(x_hat - x*)/c'x* for shortest path,
    regret/||c||_2 for the knapsack; ``relative_loss_released`` (shortest path only) the quantity
    the authors' released code computed, regret times the sum of 1/c_j over the optimal path: the
    scale of the published figures 1, 2 and 7, at least 64 times the ratio (docs/paper_notes.md).
    share_y: one y range for every panel. The published figures give each panel its own range
    (default False), so a panel can be laid over the paper's.
    log_y: a log y axis (values below the floor drawn at it, the caption counts them); the
    published figures are linear (False).
    regret (online experiments only): ``raw`` (default), the cumulative regret
    sum_t c_t'(x_t - x*_t), the y axis of the published figure 5; ``relative``, the sum of the
    relative losses (regret / ||c_t|| on the knapsack), the paper text's "cumulative regret".
    """

    where: ClassVar[str] = "experiment.plot"

    metric: Literal["relative_loss", "relative_loss_released"] = "relative_loss"
    share_y: StrictBool = False
    log_y: StrictBool = True
    regret: Literal["raw", "relative"] = "raw"


class MethodConfig(StrictModel):
    """One method of an experiment (see experiments/train.py for the meaning of each key)."""

    where: ClassVar[str] = "experiment.methods.<label>"

    label: str = ""
    estimator: str
    params: dict[str, Any] = {}
    grid: dict[str, Annotated[list[Any], Field(min_length=1)]] = {}
    radius_factors: tuple[float, ...] = ()
    x_star_only: StrictBool = False
    tuning: Literal[TUNINGS] = "costs"
    tuning_folds: Annotated[StrictInt, Field(ge=2)] = 4

    @model_validator(mode="after")
    def _known_estimator_and_hyperparameters(self):
        from ..methods.registry import METHODS

        if self.estimator not in METHODS:
            raise SpecError(f"method {self.label!r}: unknown estimator {self.estimator!r}"
                            f"{nearest(self.estimator, METHODS)}; choose one of {sorted(METHODS)}")
        cls = METHODS[self.estimator].cls
        accepted = set(cls().get_params())
        for name in [*self.params, *self.grid]:
            if name not in accepted:
                raise SpecError(f"method {self.label!r}: {self.estimator} has no hyperparameter {name!r}"
                                f"{nearest(name, accepted)}; it accepts {sorted(accepted)}")
        both = set(self.grid) & set(self.params)
        if both:
            raise SpecError(f"method {self.label!r}: {sorted(both)} both fixed (params) and tuned (grid)")
        if self.radius_factors and "radius" not in accepted:
            raise SpecError(f"method {self.label!r}: radius_factors but {self.estimator} has no radius parameter")
        if self.x_star_only and cls.needs_costs:
            raise SpecError(f"method {self.label!r}: {self.estimator} needs the costs c, so it cannot run from "
                            "x* only (x_star_only)")
        if self.tuning == "decisions":
            tunable = [name for name, entry in METHODS.items() if hasattr(entry.cls, "tuned_from_decisions")]
            if self.estimator not in tunable or not self.x_star_only or set(self.grid) != {"lam"} \
                    or self.radius_factors:
                raise SpecError(f"method {self.label!r}: tuning from decisions needs an estimator of "
                                f"{tunable} with x_star_only: true and a grid of lam alone; got "
                                f"{self.estimator} with x_star_only={self.x_star_only} and grid {sorted(self.grid)}"
                                + (" and radius_factors" if self.radius_factors else ""))
        elif "tuning_folds" in self.model_fields_set:
            raise SpecError(f"method {self.label!r}: tuning_folds applies to tuning: decisions only")
        self._check_values(cls)
        return self

    def _check_values(self, cls) -> None:
        """Every fixed value and every grid value against the estimator's declared constraints
        (`methods.base.validate_hyperparameters`), so that a lam of -1 or a step size of 0 stops
        the run here, naming the key, rather than each trial's fit inside the models' save."""
        from ..methods.base import validate_hyperparameters

        checks = [(f"params.{name}", {name: value}) for name, value in self.params.items()]
        checks += [(f"grid.{name}", {name: value}) for name, values in self.grid.items() for value in values]
        for key, value in checks:
            try:
                validate_hyperparameters(cls(**{**self.params, **value}))
            except (TypeError, ValueError) as error:
                raise SpecError(f"method {self.label!r}: {key} = {next(iter(value.values()))!r} is not a valid "
                                f"value: {error}") from None
        bad_factors = [f for f in self.radius_factors if not (math.isfinite(f) and f > 0)]
        if bad_factors:
            raise SpecError(f"method {self.label!r}: radius_factors must be positive numbers; got {bad_factors}")


class ExperimentSpec(StrictModel):
    """One paper experiment: a problem, one swept parameter, fixed settings, trials, seed.

    mode: "offline" (train, then evaluate on test samples: n_test >= 1) or "online" (one
    pass over the training stream, figure 5: n_test may be 0).
    """

    where: ClassVar[str] = "experiment"

    name: str
    problem: str
    sweep: Sweep
    fixed: dict[str, Any] = {}
    trials: Annotated[StrictInt, Field(ge=1)]
    seed: Annotated[StrictInt, Field(ge=0)]
    basis_mode: Literal["solver", "support"] = "solver"
    figure: str = ""
    mode: Literal[MODES] = "offline"
    curves_exclude: tuple[str, ...] = ()
    plot: PlotSettings = PlotSettings()
    # Hyperparameters of this experiment for every method whose estimator has them and whose own
    # params and grid leave them unset (the DFL benchmark: PyEPO's epochs per training size).
    method_params: dict[str, Any] = {}
    methods: dict[str, MethodConfig] = {}

    @model_validator(mode="before")
    @classmethod
    def _label_methods(cls, values):
        if isinstance(values, dict) and isinstance(values.get("methods"), dict):
            values = dict(values)
            # A method set to null is left out (an environment can drop a method of the base config).
            kept = {label: cfg for label, cfg in values["methods"].items() if cfg is not None}
            if values["methods"] and not kept:
                raise SpecError(f"experiment {values.get('name')!r}: every method is set to null")
            shared = values.get("method_params") or {}
            values["methods"] = {label: _with_shared_params(
                {**cfg, "label": label} if isinstance(cfg, dict) and "label" not in cfg else cfg, shared, values)
                for label, cfg in kept.items()}
        return values

    @model_validator(mode="after")
    def _settings(self):
        if self.problem not in GENERATORS:
            raise SpecError(f"experiment {self.name!r}: unknown problem {self.problem!r}"
                            f"{nearest(self.problem, GENERATORS)}; choose one of {sorted(GENERATORS)}")
        if self.plot.metric == "relative_loss_released" and self.problem != "shortest_path":
            raise SpecError(f"experiment {self.name!r}: plot.metric relative_loss_released is the released code's "
                            f"shortest-path quantity; for {self.problem} the released metric is the paper's "
                            "(relative_loss)")
        if self.mode == "offline" and "regret" in self.plot.model_fields_set:
            raise SpecError(f"experiment {self.name!r}: plot.regret draws an online experiment's curves; "
                            f"{self.name!r} is offline (mode: offline), its figure is drawn by plot.metric")
        if self.method_params:
            from ..methods.registry import METHODS

            accepted = set().union(*(METHODS[m.estimator].cls().get_params() for m in self.methods.values()))
            unknown = sorted(set(self.method_params) - accepted)
            if unknown:
                raise SpecError(f"experiment {self.name!r}: method_params {unknown} is a hyperparameter of none of "
                                f"its methods{nearest(unknown[0], accepted)}")
        if self.sweep.param in self.fixed:
            raise SpecError(f"experiment {self.name!r}: {self.sweep.param!r} is both swept and fixed")
        signature = inspect.signature(GENERATORS[self.problem]).parameters
        accepted = set(signature) - {"seed"}
        reject_unknown(self.setting_kwargs(0), accepted, f"experiment {self.name!r}: {self.problem} settings")
        integers = {k for k, p in signature.items() if p.annotation in (int, "int")}
        for setting in range(self.n_settings):
            for key, value in self.setting_kwargs(setting).items():
                if key in integers and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
                    raise SpecError(f"experiment {self.name!r}: {key} must be an integer; got {value!r}")
                minimum = {"n_train": 2, "n_test": 0 if self.mode == "online" else 1}.get(key)
                if minimum is not None and value < minimum:
                    raise SpecError(f"experiment {self.name!r}: {key} must be >= {minimum} in {self.mode} mode; "
                                    f"got {value}")
        return self

    @property
    def sweep_param(self) -> str:
        return self.sweep.param

    @property
    def sweep_values(self) -> tuple:
        return self.sweep.values

    @property
    def n_settings(self) -> int:
        return len(self.sweep_values)

    def setting_kwargs(self, setting: int) -> dict:
        """Generator keyword arguments of one setting (without the seed)."""
        kwargs = dict(self.fixed)
        kwargs[self.sweep_param] = self.sweep_values[setting]
        return kwargs

    def trial_seed(self, setting: int, trial: int, stream: int = 0) -> np.random.SeedSequence:
        """Seed of (setting, trial): any trial can be recomputed alone, in any order.

        `stream` separates independent uses inside a trial (0: data, 1: training, ...).
        """
        return np.random.SeedSequence(entropy=self.seed, spawn_key=(setting, trial, stream))

    def cells(self):
        """All (setting, trial) pairs in a fixed order."""
        return [(s, t) for s in range(self.n_settings) for t in range(self.trials)]

    def method_configs(self) -> list[MethodConfig]:
        """The configured methods in order (an offline or online experiment needs at least one)."""
        if not self.methods:
            raise SpecError(f"experiment {self.name!r}: no methods configured")
        return list(self.methods.values())


def _with_shared_params(cfg, shared: dict, experiment: dict):
    """A method's configuration with the experiment's `method_params` its estimator accepts and
    its params and grid do not set; a key no method accepts is an error naming it."""
    if not shared or not isinstance(cfg, dict) or not isinstance(shared, dict):
        return cfg
    from ..methods.registry import METHODS

    entry = METHODS.get(cfg.get("estimator"))
    if entry is None:  # MethodConfig names the unknown estimator
        return cfg
    accepted = set(entry.cls().get_params())
    taken = set(cfg.get("params") or {}) | set(cfg.get("grid") or {})
    added = {key: value for key, value in shared.items() if key in accepted and key not in taken}
    if not added:
        return cfg
    return {**cfg, "params": {**(cfg.get("params") or {}), **added}}


def _message(error: ValidationError, name: str) -> str:
    lines = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"])
        text = item["msg"].removeprefix("Value error, ").removeprefix(f"experiment {name!r}: ")
        lines.append(f"{where}: {text}" if where else text)
    return f"experiment {name!r}: " + "; ".join(lines)


def parse_spec(params: dict[str, Any] | ExperimentSpec) -> ExperimentSpec:
    """The typed spec of an experiment's parameter dict (a spec is returned as it is)."""
    if isinstance(params, ExperimentSpec):
        return params
    if not isinstance(params, dict):
        raise SpecError(f"experiment parameters must be a mapping; got {type(params).__name__}")
    try:
        return ExperimentSpec.model_validate(params)
    except ValidationError as error:
        raise SpecError(_message(error, str(params.get("name", "experiment")))) from None
