"""Hyperparameter tuning as in the paper's appendix: a validation quarter, mean relative loss.

For every cell of a parameter grid (a dict of lists, scikit-learn's ParameterGrid), the
model is fitted on the training part, decides on the validation part, and is scored by
the mean relative loss (`mom_pipeline.metrics`); the best cell (ties: first in grid
order) is refitted on ALL the samples.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.model_selection import ParameterGrid

from ..lp import StandardFormLP
from ..metrics import mean_skipping_nan, sample_metric_columns
from .base import CostModel, check_features

log = logging.getLogger(__name__)

ON_ERROR = ("raise", "nan")


@dataclass(frozen=True, eq=False)
class TuningResult:
    """best_params: the chosen grid cell; scores: one row per cell in grid order (the
    parameters, mean_relative_loss on the validation part, exact_rate, fit_seconds, error);
    best_model: refitted with best_params on all samples; train_idx / val_idx: the split;
    fallbacks: what went to a slower exact route (a joint grid fit or a refit path that
    raised), one message each, also logged as warnings."""

    best_params: dict
    scores: pd.DataFrame
    best_model: CostModel
    train_idx: np.ndarray
    val_idx: np.ndarray
    fallbacks: tuple[str, ...] = ()


def validation_split(n_samples: int, fraction: float = 0.25, random_state=0) -> tuple[np.ndarray, np.ndarray]:
    """A random split into (train_idx, val_idx), sorted, with round(fraction * T) validation
    samples (at least 1, leaving at least 1 for training)."""
    n_samples = int(n_samples)
    if n_samples < 2:
        raise ValueError(f"a validation split needs at least 2 samples; got {n_samples}")
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must be in (0, 1); got {fraction}")
    n_val = min(max(1, int(round(fraction * n_samples))), n_samples - 1)
    order = np.random.default_rng(random_state).permutation(n_samples)
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def _fit(model: CostModel, Z, X_star, lp: StandardFormLP, basis, C) -> CostModel:
    # Inverse-LP methods never see the true costs, even though the scoring needs them.
    costs = C if model.needs_costs else None
    return model.fit(Z, X_star, lp=lp, basis=basis, C=costs)


def _fit_cells_together(make_model, cells, Z, X_star, lp, basis, C, fallbacks: list[str]):
    """(models, seconds per cell) when the estimator fits a whole grid at once, else (None, 0).

    An estimator class with a ``fit_many(models, Z, X_star, lp=, basis=, C=)`` classmethod
    (SPO+: one oracle call per step for every cell) fits all the cells' models together;
    its time is shared equally by the cells. A cell that fails alone carries its error as the
    model's ``fit_error_``; when the joint fit itself raises, the cells are fitted one by one
    instead, so that each error is recorded against its own cell (and `fallbacks` says so).
    """
    if len(cells) < 2:
        return None, 0.0
    try:
        models = [make_model(**params) for params in cells]
    except Exception:  # noqa: BLE001 - as below
        return None, 0.0
    kind = type(models[0])
    if not hasattr(kind, "fit_many") or any(type(m) is not kind for m in models):
        return None, 0.0
    started = time.perf_counter()
    try:
        kind.fit_many(models, Z, X_star, lp=lp, basis=basis, C=C if kind.needs_costs else None)
    except Exception as error:  # noqa: BLE001 - the per-cell loop records (or raises) each cell's error
        # Said in the log: one cell by one is many times slower (kernel MOM loses its paths and
        # warm starts: a figure-4 trial took 20 minutes instead of 3), and the cause is a bug.
        _fallback(fallbacks, f"{kind.__name__}.fit_many failed on the {len(cells)}-cell grid "
                             f"({type(error).__name__}: {error}); fitting its cells one by one")
        return None, 0.0
    return models, (time.perf_counter() - started) / len(cells)


def _fallback(fallbacks: list[str], message: str) -> None:
    fallbacks.append(message)
    log.warning("%s", message)


def _refit(make_model: Callable[..., CostModel], best_params: dict, grid: dict[str, list], Z, X_star,
           lp: StandardFormLP, basis, C, fallbacks: list[str]) -> CostModel:
    """The chosen cell refitted on all samples.

    An estimator whose ``fit_many`` warm-starts a regularization path names its parameter in
    ``refit_path`` (kernel MOM: "lam"); it is refitted along the grid's values of it from the
    largest down to the chosen one, each solve started from the previous optimum. The result is
    the same optimum as a cold fit (each point of the path is solved exactly), found in a
    fraction of the time: a cold kernel MOM fit at lam = 1e-4..1e-6 on 500 knapsack samples took
    260-330 s, 8-9 working-set rounds of 3,400-4,400 rows (docs/decisions/010-regularization-paths.md). When the path
    fit raises, the cell is fitted alone, as before."""
    model = make_model(**best_params)
    name = getattr(type(model), "refit_path", None)
    if name is None or name not in best_params or not hasattr(type(model), "fit_many"):
        return _fit(model, Z, X_star, lp, basis, C)
    chosen = best_params[name]
    path = sorted({value for value in grid.get(name, []) if value > chosen}, reverse=True)
    if not path:
        return _fit(model, Z, X_star, lp, basis, C)
    models = [make_model(**{**best_params, name: value}) for value in path] + [model]
    try:
        type(model).fit_many(models, Z, X_star, lp=lp, basis=basis, C=C if model.needs_costs else None)
    except Exception as error:  # noqa: BLE001 - the cold fit below raises (or not) on its own
        _fallback(fallbacks, f"{type(model).__name__}.fit_many failed on the refit path {path + [chosen]} "
                             f"({type(error).__name__}: {error}); refitting the chosen cell alone")
        return _fit(make_model(**best_params), Z, X_star, lp, basis, C)
    return model


def grid_search(make_model: Callable[..., CostModel], grid: dict[str, list], Z, X_star, lp: StandardFormLP, C,
                basis, problem: str, fraction: float = 0.25, random_state=0,
                progress: bool = False, on_error: str = "raise") -> TuningResult:
    """Choose hyperparameters by mean validation relative loss, then refit on all samples.

    Args:
        make_model: builds a model from keyword parameters (e.g. the class ``Ridge``).
        grid: parameter name -> list of values (cells in scikit-learn ParameterGrid order:
            keys sorted, the last key varying fastest); ``{}`` is the single default cell.
        Z: (T, d) features; X_star: (T, n) optimal solutions of the true costs, or None to
            solve them once from C; lp: the T LPs (shared or per sample); C: (T, n) true
            costs (needed for scoring, and given to fit only when ``model.needs_costs``);
        basis: None or (T, m) observed optimal bases, split like the samples.
        problem: "shortest_path" or "knapsack" (selects the relative loss; no default, so a
            knapsack is never scored by the shortest-path ratio by accident).
        fraction, random_state: the validation split (`validation_split`).
        progress: a tqdm progress bar over the cells.
        on_error: "raise" (default) or "nan": a cell whose fit or decision raises gets a NaN
            score and its error message in the table, and is never chosen.
    """
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}; got {on_error!r}")
    if C is None:
        raise ValueError("grid_search scores cells by relative loss, which needs the true costs C")
    Z = check_features(Z)
    T = Z.shape[0]
    C = np.asarray(C, dtype=float)
    if C.shape != (T, lp.n):
        raise ValueError(f"C must be ({T}, {lp.n}); got shape {C.shape}")
    X_star = lp.solve(C).x if X_star is None else np.asarray(X_star, dtype=float)
    if basis is not None:
        basis = np.asarray(basis)
        if basis.shape[0] != T:
            raise ValueError(f"basis has {basis.shape[0]} rows but Z has {T} samples")

    train_idx, val_idx = validation_split(T, fraction, random_state)
    lp_train, lp_val = lp.subset(train_idx), lp.subset(val_idx)
    basis_train = None if basis is None else basis[train_idx]
    cells = list(ParameterGrid(grid))
    iterator = cells
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(cells, desc=getattr(make_model, "__name__", "grid"), leave=False)

    fallbacks: list[str] = []
    prefitted, shared_seconds = _fit_cells_together(make_model, cells, Z[train_idx], X_star[train_idx], lp_train,
                                                    basis_train, C[train_idx], fallbacks)
    rows = []
    for i, params in enumerate(iterator):
        started = time.perf_counter()
        row = dict(params, mean_relative_loss=np.nan, exact_rate=np.nan, error=None)
        try:
            if prefitted is not None:
                model = prefitted[i]
                if getattr(model, "fit_error_", None) is not None:
                    raise model.fit_error_  # this cell alone failed in the joint fit
            else:
                model = _fit(make_model(**params), Z[train_idx], X_star[train_idx], lp_train, basis_train,
                             C[train_idx])
            decisions = model.decide(Z[val_idx], lp_val).x
            metrics = sample_metric_columns(C[val_idx], decisions, X_star[val_idx], problem)
            row.update(mean_relative_loss=mean_skipping_nan(metrics["relative_loss"]),
                       exact_rate=float(np.mean(metrics["exact"])))
        except Exception as exc:  # noqa: BLE001 - recorded per cell when on_error="nan"
            if on_error == "raise":
                raise
            row["error"] = f"{type(exc).__name__}: {exc}"
        row["fit_seconds"] = time.perf_counter() - started + shared_seconds
        rows.append(row)
    scores = pd.DataFrame(rows)

    values = scores["mean_relative_loss"].to_numpy(dtype=float)
    if np.isnan(values).all():
        raise ValueError(f"no grid cell could be scored; errors: {scores['error'].dropna().tolist()[:3]}")
    best = int(np.nanargmin(values))  # the first minimum: ties go to the earlier cell
    # Plain Python scalars (np.logspace grids give numpy floats) so the choice serializes cleanly.
    best_params = {key: value.item() if isinstance(value, np.generic) else value for key, value in cells[best].items()}
    best_model = _refit(make_model, best_params, grid, Z, X_star, lp, basis, C, fallbacks)
    return TuningResult(best_params=best_params, scores=scores, best_model=best_model,
                        train_idx=train_idx, val_idx=val_idx, fallbacks=tuple(fallbacks))


def radius_grid(V_or_norm, factors) -> np.ndarray:
    """Projection radii factors * ||V||_F: the paper's ORACLE choice.

    The paper tunes the radius of MOM-OGD's projection over 0.8 .. 2.0 times the Frobenius
    norm of the ground-truth coefficient matrix V, a quantity no learner observes. Pass V
    (any shape) or its norm directly (a scalar); the factors come from the experiment's
    `radius_factors` (the YAML parameters are the only source of grids).
    """
    value = np.asarray(V_or_norm, dtype=float)
    norm = float(value) if value.ndim == 0 else float(np.linalg.norm(value))
    if not np.isfinite(norm) or norm <= 0:
        raise ValueError(f"the reference norm must be positive and finite; got {norm}")
    return np.asarray(factors, dtype=float) * norm


def data_driven_radius_grid(make_reference: Callable[[], CostModel], Z, X_star=None, *, lp: StandardFormLP,
                            factors, basis=None, C=None) -> np.ndarray:
    """Projection radii factors * ||Theta_ref||_F from a reference model fitted on the data.

    A learner-side replacement of `radius_grid`'s oracle ||V||_F: fit the unconstrained
    model of the same scale convention (for MOM-OGD, offline MOM with a small lam, whose
    Theta is scaled by the margin 1 like MOM-OGD's iterates; ||V||_F is on the scale of the
    cost generator, which a margin-based method does not share) on the training samples,
    and scale the norm of its ``coef_`` (n, d) by the same factors.

    Args:
        make_reference: builds the unfitted reference model (e.g. ``lambda: MOM(lam=1e-4)``);
            it must expose ``coef_`` after fit. It gets C only if it ``needs_costs``.
        Z, X_star, lp, basis, C: the training data, as for ``fit``.
    """
    reference = _fit(make_reference(), Z, X_star, lp, basis, C)
    if not hasattr(reference, "coef_"):
        raise ValueError(f"{type(reference).__name__} has no linear coef_ to take a norm of")
    return radius_grid(reference.coef_, factors)
