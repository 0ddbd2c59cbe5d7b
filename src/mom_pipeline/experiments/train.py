"""Train every configured method on a trial: tuning on a validation quarter, then refit.

A method's configuration (``methods:`` in an experiment's parameters) is

    <label>:                       # the name in tables and figures, e.g. "MOM", "PolyMOM"
      estimator: MOM               # a class of ESTIMATORS below
      params: {solver: fast}       # fixed hyperparameters (optional)
      grid: {lam: [1.0e-6, ...]}   # tuned hyperparameters: a plain parameter-dict grid
      radius_factors: [0.8, 2.0]   # optional: adds radius = factor * ||V||_F to the grid
                                   #   (the paper's ORACLE choice: V is the ground truth)
      x_star_only: false           # true: the method gets no basis, only x* (inverse LP: MOM
                                   #   then completes supp(x*) itself, or uses no basis at all)
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import logging
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..methods.base import CostModel
from .data import TrialData, TrialSolutions
from .checkpoint import CheckpointStore, trial_key
from .spec import ExperimentSpec, SpecError

log = logging.getLogger(__name__)

# label in configs -> "module:Class" (imported lazily so a missing optional piece only
# fails the experiments that use it).
ESTIMATORS = {
    "MOM": "mom_pipeline.methods.mom:MOM",
    "KernelMOM": "mom_pipeline.methods.kernels:KernelMOM",
    "OnlineMOM": "mom_pipeline.methods.online:OnlineMOM",
    "Perceptron": "mom_pipeline.methods.online:Perceptron",
    "FTRLMOM": "mom_pipeline.methods.online:FTRLMOM",
    "SuboptimalityOGD": "mom_pipeline.methods.online:SuboptimalityOGD",
    "OLS": "mom_pipeline.methods.baselines:OLS",
    "Ridge": "mom_pipeline.methods.baselines:Ridge",
    "RandomForest": "mom_pipeline.methods.baselines:RandomForest",
    "SPOPlus": "mom_pipeline.methods.baselines:SPOPlus",
    "KernelRidge": "mom_pipeline.methods.baselines:KernelRidgeCost",
}


def estimator_class(name: str) -> type[CostModel]:
    """The estimator class registered under `name`."""
    if name not in ESTIMATORS:
        raise SpecError(f"unknown estimator {name!r}; choose one of {sorted(ESTIMATORS)}")
    module, cls = ESTIMATORS[name].split(":")
    return getattr(importlib.import_module(module), cls)


@dataclass(frozen=True)
class MethodConfig:
    label: str
    estimator: str
    params: dict = field(default_factory=dict)
    grid: dict = field(default_factory=dict)
    radius_factors: tuple = ()
    x_star_only: bool = False


def parse_methods(spec: ExperimentSpec) -> list[MethodConfig]:
    """Validated method configurations of an experiment, in the configured order."""
    if not spec.methods:
        raise SpecError(f"experiment {spec.name!r}: no methods configured")
    out = []
    for label, cfg in spec.methods.items():
        if not isinstance(cfg, dict) or "estimator" not in cfg:
            raise SpecError(f"experiment {spec.name!r}: method {label!r} needs an 'estimator'")
        unknown = set(cfg) - {"estimator", "params", "grid", "radius_factors", "x_star_only"}
        if unknown:
            raise SpecError(f"experiment {spec.name!r}: method {label!r} has unknown keys {sorted(unknown)}")
        cls = estimator_class(cfg["estimator"])
        grid = {k: list(v) for k, v in (cfg.get("grid") or {}).items()}
        params = dict(cfg.get("params") or {})
        accepted = set(cls().get_params())
        bad = (set(grid) | set(params)) - accepted
        if bad:
            raise SpecError(f"experiment {spec.name!r}: method {label!r}: {cfg['estimator']} has no "
                            f"hyperparameters {sorted(bad)}; it accepts {sorted(accepted)}")
        both = set(grid) & set(params)
        if both:
            raise SpecError(f"experiment {spec.name!r}: method {label!r}: {sorted(both)} both fixed (params) and tuned (grid)")
        factors = tuple(float(f) for f in cfg.get("radius_factors") or ())
        if factors and "radius" not in accepted:
            raise SpecError(f"experiment {spec.name!r}: method {label!r}: radius_factors but no radius parameter")
        x_star_only = bool(cfg.get("x_star_only", False))
        if x_star_only and cls.needs_costs:
            raise SpecError(f"experiment {spec.name!r}: method {label!r}: {cfg['estimator']} needs the costs c, "
                            "so it cannot run from x* only")
        out.append(MethodConfig(label=label, estimator=cfg["estimator"], params=params, grid=grid,
                                radius_factors=factors, x_star_only=x_star_only))
    return out


@dataclass(frozen=True, eq=False)
class TrainedMethod:
    """One fitted method of one trial, with its chosen hyperparameters and timings."""

    label: str
    estimator: str
    model: CostModel
    best_params: dict
    fit_seconds: float
    tuning_seconds: float
    tuning_scores: pd.DataFrame
    trial_fingerprint: str = ""


def trial_fingerprint(trial: TrialData) -> str:
    """A hash of the trial's training data: evaluation checks that the models it loads were
    trained on the trial it evaluates (and not, say, on another run's data)."""
    digest = hashlib.sha1(np.ascontiguousarray(trial.data.train.Z).tobytes())
    digest.update(np.ascontiguousarray(trial.data.train.C).tobytes())
    return digest.hexdigest()


def _seed(spec: ExperimentSpec, setting: int, trial: int) -> int:
    return int(spec.trial_seed(setting, trial, stream=1).generate_state(1)[0])


def train_method(spec: ExperimentSpec, config: MethodConfig, trial: TrialData, solutions: TrialSolutions) -> TrainedMethod:
    """Tune `config` on a validation quarter of the trial's training samples and refit."""
    from ..methods.tuning import grid_search

    cls = estimator_class(config.estimator)
    data = trial.data
    seed = _seed(spec, trial.setting, trial.trial)
    fixed = dict(config.params)
    if "random_state" in cls().get_params() and "random_state" not in fixed:
        fixed["random_state"] = seed
    grid = dict(config.grid)
    if config.radius_factors:
        grid["radius"] = [float(f * np.linalg.norm(data.V)) for f in config.radius_factors]

    def make(**params):
        return cls(**fixed, **params)

    basis = None if config.x_star_only else solutions.train.basis

    if not grid:
        # Nothing to tune: one fit on all training samples, no validation split.
        started = time.perf_counter()
        model = make()
        model.fit(data.train.Z, solutions.train.x, lp=data.lp, basis=basis,
                  C=data.train.C if model.needs_costs else None)
        fit_seconds = time.perf_counter() - started
        return TrainedMethod(label=config.label, estimator=config.estimator, model=model, best_params={},
                             fit_seconds=fit_seconds, tuning_seconds=0.0,
                             tuning_scores=pd.DataFrame({"mean_relative_loss": [np.nan]}))
    started = time.perf_counter()
    result = grid_search(make, grid, data.train.Z, solutions.train.x, data.lp, data.train.C,
                         basis=basis, problem=spec.problem, random_state=seed, on_error="nan")
    tuning_seconds = time.perf_counter() - started
    model = result.best_model
    # The final refit on all training samples: total time minus the time of the grid cells.
    fit_seconds = max(0.0, tuning_seconds - float(result.scores["fit_seconds"].sum()))
    return TrainedMethod(label=config.label, estimator=config.estimator, model=model,
                         best_params=result.best_params, fit_seconds=fit_seconds,
                         tuning_seconds=tuning_seconds, tuning_scores=result.scores)


def train_trial(spec: ExperimentSpec, trial: TrialData, solutions: TrialSolutions) -> dict[str, TrainedMethod]:
    """Every configured method on one trial."""
    started = time.perf_counter()
    fingerprint = trial_fingerprint(trial)
    out = {cfg.label: dataclasses.replace(train_method(spec, cfg, trial, solutions), trial_fingerprint=fingerprint)
           for cfg in parse_methods(spec)}
    # debug: runs in a worker; the main process logs each finished trial with an ETA
    log.debug("%s: setting %s=%s trial %d trained %d methods in %.1f s", spec.name, spec.sweep_param,
             trial.setting_value, trial.trial, len(out), time.perf_counter() - started)
    return out


def train_trial_resumable(spec: ExperimentSpec, trial: TrialData, solutions: TrialSolutions,
                          checkpoint_dir: str | None) -> dict[str, TrainedMethod]:
    """`train_trial`, reusing the trial's checkpoint when a previous run finished it."""
    store = CheckpointStore(checkpoint_dir)
    key = trial_key(spec, trial.setting, trial.trial)
    cached = store.load(key)
    if cached is not None:
        log.info("%s: reusing finished trial (setting %d, trial %d) from %s", spec.name, trial.setting, trial.trial,
                 checkpoint_dir)
        return cached
    trained = train_trial(spec, trial, solutions)
    store.save(key, trained)
    return trained


def partition_key(setting: int, trial: int) -> str:
    """Name of a trial's partition in partitioned datasets."""
    return f"setting{setting:02d}_trial{trial:03d}"


def hyperparameter_rows(spec: ExperimentSpec, setting: int, setting_value, trial: int,
                        trained: dict[str, TrainedMethod]) -> list[dict]:
    """Rows of the chosen-hyperparameters table for one trial."""
    rows = []
    for label, tm in trained.items():
        scores = tm.tuning_scores["mean_relative_loss"]
        rows.append(dict(experiment=spec.name, setting=setting, setting_value=float(setting_value), trial=trial,
                         method=label, estimator=tm.estimator,
                         params=", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                                          for k, v in sorted(tm.best_params.items())),
                         validation_relative_loss=float(np.nanmin(scores)) if scores.notna().any() else np.nan,
                         grid_cells=len(tm.tuning_scores), fit_seconds=tm.fit_seconds,
                         tuning_seconds=tm.tuning_seconds))
    return rows
