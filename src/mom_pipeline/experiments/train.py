"""Train every configured method on a trial: tuning on a validation quarter, then refit.

A method's configuration (``methods:`` in an experiment's parameters) is

    <label>:                       # the name in tables and figures, e.g. "MOM", "PolyMOM"
      estimator: MOM               # a name of methods.registry.METHODS
      params: {solver: fast}       # fixed hyperparameters (optional)
      grid: {lam: [1.0e-6, ...]}   # tuned hyperparameters: a plain parameter-dict grid
      radius_factors: [0.8, 2.0]   # optional: adds radius = factor * ||V||_F to the grid
                                   #   (the paper's ORACLE choice: V is the ground truth)
      x_star_only: false           # true: the method gets no basis, only x* (inverse LP: MOM
                                   #   then completes supp(x*) itself, or uses no basis at all)
      tuning: costs                # costs (default): the grid cell of lowest relative loss on a
                                   #   validation quarter, scored with the true costs;
                                   #   decisions (MOM from x* alone): lam by K-fold validation on
                                   #   the held-out decisions reproduced, the inverse pipeline's
                                   #   `cost_free_tuning.validation_curve`; no cost is ever read
      tuning_folds: 4              # K of tuning: decisions

A method set to null (``<label>: null``, e.g. in an environment that overrides a base
configuration) is left out of that experiment.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..methods.base import CostModel
from ..methods.registry import UnknownMethodError, method_entry
from ..methods.tuning import radius_grid
from .code_identity import code_identity, source_commit
from .data import TrialData, TrialSolutions
from .identity import check_same_trial
from .spec import ExperimentSpec, MethodConfig, SpecError
from .storage import StoredTrial, lighten

log = logging.getLogger(__name__)

def estimator_class(name: str) -> type[CostModel]:
    """The estimator class registered under `name` (`methods.registry`)."""
    try:
        return method_entry(name).cls
    except UnknownMethodError as error:
        raise SpecError(str(error)) from None


def parse_methods(spec: ExperimentSpec) -> list[MethodConfig]:
    """The experiment's method configurations, in the configured order (validated by the spec)."""
    return spec.method_configs()


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
    data_key: str = ""
    # Slower exact routes the tuning took (`TuningResult.fallbacks`), logged by the main process
    # with the trial's name (trials stored before this field read it as the class default).
    fallbacks: tuple[str, ...] = ()
    # The trial file this method was taken from when it was not trained for this trial but
    # found already trained on the same data (`storage.MethodIndex`); "" when trained here.
    reused_from: str = ""
    # What trained it: `code_identity.code_identity` of its estimator and the checkout's git
    # commit (`code_identity.source_commit`), stamped in the main process; "" when unknown
    # (stored before these fields).
    code: str = ""
    commit: str = ""


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
        grid["radius"] = [float(radius) for radius in radius_grid(data.V, config.radius_factors)]

    def make(**params):
        return cls(**fixed, **params)

    basis = None if config.x_star_only else solutions.train.basis

    if config.tuning == "decisions":
        return _train_from_decisions(config, cls(**fixed), trial, solutions, seed)
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
    with _tuning_warnings_kept():
        result = grid_search(make, grid, data.train.Z, solutions.train.x, data.lp, data.train.C,
                             basis=basis, problem=spec.problem, random_state=seed, on_error="nan")
    tuning_seconds = time.perf_counter() - started
    model = result.best_model
    # The final refit on all training samples: total time minus the time of the grid cells.
    fit_seconds = max(0.0, tuning_seconds - float(result.scores["fit_seconds"].sum()))
    return TrainedMethod(label=config.label, estimator=config.estimator, model=model,
                         best_params=result.best_params, fit_seconds=fit_seconds,
                         tuning_seconds=tuning_seconds, tuning_scores=result.scores, fallbacks=result.fallbacks)


def _train_from_decisions(config: MethodConfig, template: CostModel, trial: TrialData, solutions: TrialSolutions,
                          seed: int) -> TrainedMethod:
    """lam chosen from the decisions alone, then the refit on every training sample
    (`tuned_from_decisions` of the estimator class: for MOM, the inverse pipeline's
    `cost_free_tuning.validation_curve`). Only x* and the LPs are passed, never the costs."""
    data = trial.data
    started = time.perf_counter()
    model, curve = type(template).tuned_from_decisions(template.get_params(), config.grid["lam"], data.train.Z,
                                                       solutions.train.x, data.lp, n_folds=config.tuning_folds,
                                                       seed=seed)
    tuning_seconds = time.perf_counter() - started
    grid_seconds = float(curve["grid_fit_seconds"].iloc[0])
    # mean_relative_loss is NaN: no cell is scored with costs (the hyperparameter table says so)
    scores = curve.assign(mean_relative_loss=np.nan, fit_seconds=grid_seconds / len(curve))
    return TrainedMethod(label=config.label, estimator=config.estimator, model=model,
                         best_params={"lam": float(model.lam)}, fit_seconds=max(0.0, tuning_seconds - grid_seconds),
                         tuning_seconds=tuning_seconds, tuning_scores=scores)


@contextlib.contextmanager
def _tuning_warnings_kept():
    """Keep `grid_search`'s own fallback warnings out of the log while a trial trains: in a
    worker process they would reach the log unformatted and without the trial's name. They
    come back in `TuningResult.fallbacks`, and `log_failed_cells` logs them with the trial."""
    tuning_log = logging.getLogger("mom_pipeline.methods.tuning")
    silenced = logging.Filter("(nothing)")  # a named filter that no record's logger name matches
    tuning_log.addFilter(silenced)
    try:
        yield
    finally:
        tuning_log.removeFilter(silenced)


def train_trial(spec: ExperimentSpec, trial: TrialData, solutions: TrialSolutions,
                skip: frozenset[str] = frozenset()) -> dict[str, TrainedMethod]:
    """Every configured method on one trial (except the labels in `skip`)."""
    check_same_trial("solutions", solutions.data_key, trial, spec.name)
    started = time.perf_counter()
    out = {cfg.label: dataclasses.replace(train_method(spec, cfg, trial, solutions), data_key=trial.key)
           for cfg in parse_methods(spec) if cfg.label not in skip}
    # debug: runs in a worker; the main process logs each finished trial with an ETA
    log.debug("%s: setting %s=%s trial %d trained %d methods in %.1f s", spec.name, spec.sweep_param,
             trial.setting_value, trial.trial, len(out), time.perf_counter() - started)
    return out


def train_for_storage(spec: ExperimentSpec, trial: TrialData, solutions: TrialSolutions, key: str,
                      keep_models: str, skip: frozenset[str] = frozenset()) -> StoredTrial:
    """`train_trial`, reduced to what `keep_models` stores (in the worker: the full forests
    never travel back to the main process). The methods in `skip` are left out (the caller
    has them already trained: `with_reused`)."""
    trained = train_trial(spec, trial, solutions, skip)
    methods = lighten(trained, trial, keep_models, spec.methods)
    return StoredTrial(key=key, data_key=trial.key, setting=trial.setting, trial=trial.trial, methods=methods)


def with_reused(spec: ExperimentSpec, stored: StoredTrial, reused: dict) -> StoredTrial:
    """The trial with the methods found already trained (reused = {label: (method, trial
    file)}) added to those trained here, in the configured order; each reused method is
    relabelled for this experiment and records the file it came from, each method trained
    here records the code and the commit that trained it."""
    methods = {}
    for config in parse_methods(spec):
        if config.label in reused:
            method, path = reused[config.label]
            methods[config.label] = dataclasses.replace(method, label=config.label, reused_from=str(path))
        else:
            methods[config.label] = dataclasses.replace(stored.methods[config.label],
                                                        code=code_identity(config.estimator), commit=source_commit())
    return dataclasses.replace(stored, methods=methods)


def failed_cells(trained: dict[str, TrainedMethod]) -> dict[str, pd.DataFrame]:
    """Per method, the grid cells whose fit or decision raised (with their error)."""
    out = {}
    for label, tm in trained.items():
        scores = tm.tuning_scores
        if "error" in scores and scores["error"].notna().any():
            out[label] = scores[scores["error"].notna()]
    return out


def trained_by(methods) -> str:
    """What trained the methods (`TrainedMethod`s), for a log line: their commits and code
    identities. `methods` may be a generator: it is read once."""
    methods = list(methods)
    commits = sorted({getattr(m, "commit", "") or "an unknown commit" for m in methods})
    codes = sorted({getattr(m, "code", "") or "unknown" for m in methods})
    return f"trained at {', '.join(commits)} (code {', '.join(codes)})"


def log_failed_cells(spec: ExperimentSpec, setting: int, trial: int, trained: dict[str, TrainedMethod],
                     seen: dict[tuple[str, str], list[tuple[int, int]]] | None = None,
                     errors: dict[tuple[str, str], str] | None = None) -> None:
    """One warning per slower exact route the tuning took (`TrainedMethod.fallbacks`), and one
    per grid cell that failed (it is scored NaN and never chosen).

    With `seen` (kept by the caller across the trials of a run) a (method, cell) is logged as a
    warning only the first time it fails, later failures at debug level, and the (setting,
    trial) of every failure is added to `seen` for `log_failed_cell_summary`: the paper's grids
    hold cells that fail in every trial (SPO+ diverges at lam x step_size >= 100), and one
    warning per trial buried a run's log under hundreds of identical lines. A cell whose fit
    diverged (`diverged` below) is an expected outcome of a grid search over step sizes: it is
    logged at debug level here and once, at INFO, in the summary (`errors`, kept by the caller
    as well, holds each cell's first error for it)."""
    for label, tm in trained.items():
        for message in tm.fallbacks:
            log.warning("%s: setting %d, trial %d: %s tuning: %s", spec.name, setting, trial, label, message)
    for label, cells in failed_cells(trained).items():
        for _, row in cells.iterrows():
            params = {k: v for k, v in row.items()
                      if k not in ("mean_relative_loss", "exact_rate", "error", "fit_seconds")}
            key = (label, str(params))
            first = seen is None or key not in seen
            if seen is not None:
                seen.setdefault(key, []).append((setting, trial))
            if errors is not None:
                errors.setdefault(key, str(row["error"]))
            expected = diverged(row["error"])
            level = logging.DEBUG if not first or (expected and seen is not None) else \
                logging.INFO if expected else logging.WARNING
            log.log(level,
                    "%s: setting %d, trial %d: %s grid cell %s failed and is skipped: %s%s", spec.name, setting, trial,
                    label, params, row["error"], " (later failures of this cell: summary at the end of training)"
                    if seen is not None else "")


def diverged(error) -> bool:
    """Whether a grid cell's error is its fit diverging (an iterate or a prediction overflowed:
    a too large step size), rather than something going wrong."""
    return "diverged" in str(error)


def log_failed_cell_summary(name: str, seen: dict[tuple[str, str], list[tuple[int, int]]], trials: int,
                            errors: dict[tuple[str, str], str] | None = None) -> None:
    """One line per (method, grid cell) that failed in some of the `trials` trials trained by
    this run, with how many (the trials' hyperparameters table counts them too: `failed_cells`):
    INFO for cells that diverged, a warning for any other failure."""
    errors = errors or {}
    for key, where in seen.items():
        label, params = key
        settings = sorted({setting for setting, _ in where})
        expected = diverged(errors.get(key, ""))
        log.log(logging.INFO if expected else logging.WARNING,
                "%s: %s grid cell %s %s in %d of the %d trials trained (settings %s) and was skipped there "
                "(scored NaN, never chosen)", name, label, params, "diverged" if expected else "failed", len(where),
                trials, ", ".join(map(str, settings)))


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
                         grid_cells=len(tm.tuning_scores),
                         failed_cells=int(tm.tuning_scores["error"].notna().sum())
                         if "error" in tm.tuning_scores else 0,
                         fit_seconds=tm.fit_seconds,
                         tuning_seconds=tm.tuning_seconds,
                         # trained by another run or experiment on the same data: its seconds
                         # were spent there (`storage.MethodIndex`)
                         reused=bool(tm.reused_from)))
    return rows
