"""Experiment specs: parsed, validated parameters and the per-trial seeding."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..lp import BASIS_MODES
from ..problems import GENERATORS

SWEEPABLE = ("degree", "alpha_bar", "eps_bar", "eta_bar", "n_train")


class SpecError(ValueError):
    """An experiment's parameters are missing or invalid; the message names the key."""


@dataclass(frozen=True)
class ExperimentSpec:
    """One paper experiment: a problem, one swept parameter, fixed settings, trials, seed."""

    name: str
    problem: str
    sweep_param: str
    sweep_values: tuple
    fixed: dict
    trials: int
    seed: int
    basis_mode: str = "solver"
    figure: str = ""
    methods: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)

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


def _require(params: dict, key: str, name: str):
    if key not in params:
        raise SpecError(f"experiment {name!r}: missing parameter {key!r}")
    return params[key]


def parse_spec(params: dict[str, Any]) -> ExperimentSpec:
    """Validate an experiment's parameter dict (from conf/*/parameters_<pipeline>.yml)."""
    if not isinstance(params, dict):
        raise SpecError(f"experiment parameters must be a mapping; got {type(params).__name__}")
    name = str(params.get("name", "experiment"))
    problem = _require(params, "problem", name)
    if problem not in GENERATORS:
        raise SpecError(f"experiment {name!r}: unknown problem {problem!r}; choose one of {sorted(GENERATORS)}")
    sweep = _require(params, "sweep", name)
    if not isinstance(sweep, dict) or "param" not in sweep or "values" not in sweep:
        raise SpecError(f"experiment {name!r}: sweep must be {{param: ..., values: [...]}}")
    if sweep["param"] not in SWEEPABLE:
        raise SpecError(f"experiment {name!r}: cannot sweep {sweep['param']!r}; choose one of {SWEEPABLE}")
    values = tuple(sweep["values"])
    if not values:
        raise SpecError(f"experiment {name!r}: sweep values are empty")
    fixed = dict(params.get("fixed", {}))
    if sweep["param"] in fixed:
        raise SpecError(f"experiment {name!r}: {sweep['param']!r} is both swept and fixed")
    trials = int(_require(params, "trials", name))
    if trials < 1:
        raise SpecError(f"experiment {name!r}: trials must be >= 1; got {trials}")
    seed = int(_require(params, "seed", name))
    basis_mode = params.get("basis_mode", "solver")
    if basis_mode not in BASIS_MODES:
        raise SpecError(f"experiment {name!r}: basis_mode must be one of {BASIS_MODES}; got {basis_mode!r}")
    known = {"name", "problem", "sweep", "fixed", "trials", "seed", "basis_mode", "figure", "methods"}
    spec = ExperimentSpec(
        name=name,
        problem=problem,
        sweep_param=sweep["param"],
        sweep_values=values,
        fixed=fixed,
        trials=trials,
        seed=seed,
        basis_mode=basis_mode,
        figure=str(params.get("figure", "")),
        methods=dict(params.get("methods", {}) or {}),
        extra={k: v for k, v in params.items() if k not in known},
    )
    # Fail early on generator arguments that do not exist.
    import inspect

    accepted = set(inspect.signature(GENERATORS[problem]).parameters) - {"seed"}
    unknown = set(spec.setting_kwargs(0)) - accepted
    if unknown:
        raise SpecError(f"experiment {name!r}: unknown {problem} settings {sorted(unknown)}; accepted: {sorted(accepted)}")
    return spec
