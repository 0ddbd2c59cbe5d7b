"""An example dataset in the input tables of `mom_pipeline.inverse.schema`: observed routes.

A courier drives from the south-west to the north-east corner of a small grid road network
(edges go east or north) and takes the fastest route. Travel times depend on the context
through a hidden linear model

    time_e(z) = base_e + a_e hour_sin + b_e hour_cos + rain_e rain_mm + weekend_e weekend,

times a small multiplicative noise. Only the contexts and the chosen routes are recorded;
MOM learns a cost model from them and prescribes routes for new contexts.

The LP is written in inequality form: flow conservation at EVERY node as equalities (one of
them is redundant, so the conversion drops it) and bounds 0 <= x_e <= 1.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..lp import GridShortestPath
from .schema import ID
from .writing import constraints_to_tables

CONTEXT_NAMES = ("hour_sin", "hour_cos", "rain_mm", "weekend")


def _contexts(rng: np.random.Generator, size: int, n_features: int) -> pd.DataFrame:
    """Contexts: time of day on the unit circle, rain (mm, mostly dry), weekend flag, and
    `n_features - 4` sensor readings that do not affect travel times."""
    hour = rng.uniform(0.0, 24.0, size)
    rain = np.where(rng.random(size) < 0.6, 0.0, np.minimum(rng.exponential(3.0, size), 20.0))
    columns = {
        "hour_sin": np.sin(2 * np.pi * hour / 24),
        "hour_cos": np.cos(2 * np.pi * hour / 24),
        "rain_mm": np.round(rain, 2),
        "weekend": (rng.random(size) < 2 / 7).astype(float),
    }
    for k in range(max(0, n_features - len(CONTEXT_NAMES))):
        columns[f"sensor_{k}"] = rng.standard_normal(size)
    return pd.DataFrame({name: columns[name] for name in list(columns)[:n_features]})


def _hidden_model(rng: np.random.Generator, n_edges: int) -> dict:
    """Per-edge coefficients; base >= 3 and |hour| + rain + weekend effects keep times > 0."""
    return {
        "base": rng.uniform(3.0, 5.0, n_edges),
        "hour_sin": rng.uniform(-0.8, 0.8, n_edges),
        "hour_cos": rng.uniform(-0.8, 0.8, n_edges),
        "rain_mm": rng.uniform(0.0, 0.3, n_edges),
        "weekend": rng.uniform(-0.5, 0.0, n_edges),
    }


def _travel_times(contexts: pd.DataFrame, model: dict, noise: float, rng: np.random.Generator) -> np.ndarray:
    times = np.broadcast_to(model["base"], (len(contexts), model["base"].size)).copy()
    for name in CONTEXT_NAMES:
        if name in contexts:
            times += np.outer(contexts[name].to_numpy(), model[name])
    return times * rng.uniform(1.0 - noise, 1.0 + noise, times.shape)


def grid_flow_constraints(grid: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, GridShortestPath]:
    """Flow conservation at every node of the grid (in - out = -1 at the source, +1 at the
    sink, 0 elsewhere): A_eq (h*w, n_edges) of rank h*w - 1, and b_eq."""
    structure = GridShortestPath(*grid)
    arcs = structure.arcs
    A_eq = np.zeros((structure.n_nodes, len(arcs)))
    A_eq[arcs[:, 1], np.arange(len(arcs))] = 1.0
    A_eq[arcs[:, 0], np.arange(len(arcs))] = -1.0
    b_eq = np.zeros(structure.n_nodes)
    b_eq[0], b_eq[-1] = -1.0, 1.0
    return A_eq, b_eq, structure


def make_example_dataset(n_observations: int = 200, grid: tuple[int, int] = (4, 4), n_features: int = 4,
                         seed=0, n_new: int = 20, noise: float = 0.05) -> dict:
    """Example tables for inverse LP (deterministic in `seed`).

    Returns:
        {"features": id + contexts, "decisions": id + x_0..x_{n-1} (the observed routes,
        0/1 per edge), "constraints", "rhs", "bounds" (shared, inequality form),
        "new_contexts": contexts to prescribe routes for, "new_travel_times": their hidden
        travel times (id + c_0..c_{n-1}, for evaluation only), "edges": col, tail, head of
        every edge (nodes numbered row by row from the south-west corner)}.
    """
    if n_observations < 1 or n_new < 0 or n_features < 1:
        raise ValueError(f"need n_observations >= 1, n_new >= 0, n_features >= 1; got "
                         f"{n_observations}, {n_new}, {n_features}")
    if not 0 <= noise < 1:
        raise ValueError(f"noise must be in [0, 1); got {noise}")
    rng = np.random.default_rng(seed)
    A_eq, b_eq, structure = grid_flow_constraints(grid)
    n = structure.n_edges
    model = _hidden_model(rng, n)
    contexts = _contexts(rng, n_observations, n_features)
    times = _travel_times(contexts, model, noise, rng)
    routes = structure.solve(times).x

    ids = [f"obs-{t:04d}" for t in range(n_observations)]
    features = contexts.copy()
    features.insert(0, ID, ids)
    decisions = pd.DataFrame(routes, columns=[f"x_{j}" for j in range(n)])
    decisions.insert(0, ID, ids)
    tables = constraints_to_tables(A_eq=A_eq, b_eq=b_eq, lower=np.zeros(n), upper=np.ones(n))

    new_contexts = _contexts(rng, n_new, n_features)
    new_ids = [f"new-{t:03d}" for t in range(n_new)]
    new_times = pd.DataFrame(_travel_times(new_contexts, model, noise, rng), columns=[f"c_{j}" for j in range(n)])
    new_times.insert(0, ID, new_ids)
    new_contexts.insert(0, ID, new_ids)
    edges = pd.DataFrame({"col": np.arange(n), "tail": structure.arcs[:, 0], "head": structure.arcs[:, 1]})
    return {"features": features, "decisions": decisions, **tables, "new_contexts": new_contexts,
            "new_travel_times": new_times, "edges": edges}
