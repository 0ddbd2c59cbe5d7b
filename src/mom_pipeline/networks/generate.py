"""Observed routes on a road network, generated: contexts -> BPR link times -> shortest routes.

For observation t with context (hour, weekend, rain) the demand level D_t follows a weekday
profile with morning and evening peaks (flatter on weekends), and the link times are BPR's

    c_ta = fft_a (1 + b_a (D_t v0_a / cap_a)^p (1 + RAIN_DELAY rain_t)),

v0 the baseline flows: an all-or-nothing assignment of the trip table at free-flow times,
scaled so that the busiest arc's v0 / cap is `peak_volume_capacity`. With the arc attribute
``baseline_delay`` = fft b (v0 / cap)^p and the features ``demand_index`` = D^p and
``rain_x_demand_index`` = rain D^p, the noise-free times are exactly linear in both cost models

    c_ta = fft_a * 1 + baseline_delay_a * (demand_index_t + RAIN_DELAY rain_x_demand_index_t),

(shared model: arc features [free_flow_time, baseline_delay] with the intercept; per-arc model:
Theta_a = [fft_a, baseline_delay_a, RAIN_DELAY baseline_delay_a] on the same features), so a
fit can reproduce every noise-free route. This needs one BPR power for every arc (TNTP networks
have p = 4 throughout); with several powers the times are not linear in the features.
``hour_sin``, ``hour_cos``, ``weekend`` and ``rain`` are features too: they move the demand but do
not enter the times on their own. Noise: every time is multiplied by exp(noise * N(0, 1)),
drawn per observation and arc (0: noise-free). The routes are the exact shortest routes under the
times (`oracle.shortest_routes`, TNTP zones respected); origin-destination pairs are drawn in
proportion to the trip table. Everything is drawn from one seeded generator.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .network import Network, usable_arcs
from .oracle import assign_all_or_nothing, shortest_routes

RAIN_DELAY = 0.5  # rain adds half again to the congestion delay
RAIN_SHARE = 0.25
WEEKEND_SHARE = 2 / 7
FEATURES = ("hour_sin", "hour_cos", "weekend", "rain", "demand_index", "rain_x_demand_index")
ARC_FEATURES = ("free_flow_time", "baseline_delay")


def od_pairs(trips: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(origins, destinations, demand) of the zone pairs with positive demand (zone k is node k)."""
    trips = np.asarray(trips, dtype=float).copy()
    np.fill_diagonal(trips, 0.0)
    o, d = np.nonzero(trips > 0)
    return o, d, trips[o, d]


def baseline_flows(network: Network, trips: np.ndarray) -> np.ndarray:
    """All-or-nothing assignment of the trip table at free-flow times: (n,) arc flows."""
    o, d, demand = od_pairs(trips)
    fft = network.attributes["free_flow_time"].to_numpy(dtype=float)
    return assign_all_or_nothing(network, fft, o, d, demand, lambda origins: usable_arcs(network, origins))


def with_baseline(network: Network, trips: np.ndarray, peak_volume_capacity: float = 2.5) -> Network:
    """The network with arc attributes baseline_flow (v0) and baseline_delay (fft b (v0/cap)^p)."""
    missing = [c for c in ("free_flow_time", "b", "power", "capacity") if c not in network.attributes.columns]
    if missing:
        raise ValueError(f"network {network.name!r} lacks the BPR attribute(s) {missing}")
    flows = baseline_flows(network, trips)
    a = network.attributes
    cap = a["capacity"].to_numpy(dtype=float)
    ratio = np.divide(flows, cap, out=np.zeros_like(flows), where=cap > 0)
    if ratio.max() > 0:
        flows = flows * (peak_volume_capacity / ratio.max())
        ratio = ratio * (peak_volume_capacity / ratio.max())
    attributes = a.copy()
    attributes["baseline_flow"] = flows
    attributes["baseline_delay"] = a["free_flow_time"] * a["b"] * ratio ** a["power"]
    return Network(network.tails, network.heads, network.n_nodes, network.node_labels, network.arc_labels, attributes,
                   network.first_thru_node, network.name)


def _contexts(rng: np.random.Generator, T: int, power: float) -> pd.DataFrame:
    hour = rng.uniform(0.0, 24.0, T)
    weekend = (rng.random(T) < WEEKEND_SHARE).astype(float)
    rain = (rng.random(T) < RAIN_SHARE).astype(float)
    weekday_profile = 0.35 + 0.85 * np.exp(-((hour - 8.0) / 1.5) ** 2) + 0.95 * np.exp(-((hour - 17.5) / 2.0) ** 2)
    weekend_profile = 0.4 + 0.5 * np.exp(-((hour - 13.0) / 3.0) ** 2)
    level = np.where(weekend > 0, weekend_profile, weekday_profile) * np.exp(0.1 * rng.standard_normal(T))
    demand_index = level ** power
    return pd.DataFrame({"hour_sin": np.sin(2 * np.pi * hour / 24), "hour_cos": np.cos(2 * np.pi * hour / 24),
                         "weekend": weekend, "rain": rain, "demand_index": demand_index,
                         "rain_x_demand_index": rain * demand_index})


def link_times(network: Network, contexts: pd.DataFrame, noise: float, rng: np.random.Generator) -> np.ndarray:
    """(T, n) BPR times of the contexts on a network `with_baseline` (noise: see the module)."""
    a = network.attributes
    fft, delay = a["free_flow_time"].to_numpy(dtype=float), a["baseline_delay"].to_numpy(dtype=float)
    load = (contexts["demand_index"] + RAIN_DELAY * contexts["rain_x_demand_index"]).to_numpy()
    times = fft[None, :] + load[:, None] * delay[None, :]
    if noise > 0:
        times = times * np.exp(noise * rng.standard_normal(times.shape))
    return times


def _route_table(network: Network, ids, origins, destinations, routes) -> pd.DataFrame:
    labels = network.node_labels
    return pd.DataFrame({"id": ids, "origin": labels[origins], "destination": labels[destinations],
                         "nodes": [" ".join(str(v) for v in network.route_nodes(r, o))
                                   for r, o in zip(routes, origins)]})


def generate_routes(network: Network, trips: np.ndarray, *, n_observations: int = 1000, n_new: int = 100,
                    noise: float = 0.0, seed: int = 0, peak_volume_capacity: float = 2.5) -> dict:
    """Tables of an observed-routes data set on `network` (trips: its (Z, Z) demand matrix).

    Returns {"network": the network with baseline_flow / baseline_delay, "features", "routes",
    "new_contexts" (id, origin, destination, features), "new_routes" (their true routes)}.
    """
    if n_observations < 1 or n_new < 0 or noise < 0:
        raise ValueError("n_observations must be >= 1, n_new >= 0 and noise >= 0")
    powers = np.unique(network.attributes["power"].to_numpy(dtype=float))
    if powers.size != 1:
        raise ValueError(f"network {network.name!r} has BPR powers {powers.tolist()}: the generator's linear features "
                         "need one power for every arc")
    network = with_baseline(network, trips, peak_volume_capacity)
    rng = np.random.default_rng(seed)
    o_all, d_all, demand = od_pairs(trips)
    tables = {"network": network}
    for name, T, prefix in (("routes", n_observations, "r"), ("new_routes", n_new, "new")):
        contexts = _contexts(rng, T, float(powers[0]))
        pair = rng.choice(o_all.size, size=T, p=demand / demand.sum())
        o, d = o_all[pair], d_all[pair]
        times = link_times(network, contexts, noise, rng)
        routes = shortest_routes(network, times, o, d, usable_arcs(network, o, d)) if T else np.zeros((0, network.n_arcs))
        ids = [f"{prefix}{k:05d}" for k in range(T)]
        features = contexts.copy()
        features.insert(0, "id", ids)
        route_table = _route_table(network, ids, o, d, routes)
        if name == "routes":
            tables["features"], tables["routes"] = features, route_table
        else:
            tables["new_contexts"] = pd.concat([route_table[["id", "origin", "destination"]],
                                                features.drop(columns="id")], axis=1)
            tables["new_routes"] = route_table
    return tables


def grid_network(rows: int = 4, cols: int = 4, seed: int = 0, centroids: int | None = None) -> tuple[Network, np.ndarray]:
    """A road network that needs no file: a rows x cols grid of two-way streets, one faster
    avenue per row and column alternately, every node a thoroughfare (first thru node 1), and a
    gravity-like trip table. centroids=None: every node is a zone; k: k nodes spread evenly over
    the grid are (numbered first, trips (k, k)), which keeps the trip table and the baseline
    assignment small on large grids (the node labels stay the grid's, r * cols + c + 1).
    Returns (network, trips)."""
    rng = np.random.default_rng(seed)
    N = rows * cols
    if centroids is not None and not 1 < centroids <= N:
        raise ValueError(f"centroids must be between 2 and the grid's {N} nodes; got {centroids}")
    tails, heads, fast = [], [], []
    for r in range(rows):
        for c in range(cols):
            v = r * cols + c
            for dr, dc in ((0, 1), (1, 0)):
                if r + dr < rows and c + dc < cols:
                    w = (r + dr) * cols + c + dc
                    avenue = (r % 2 == 0) if dr == 0 else (c % 2 == 0)
                    tails += [v, w]
                    heads += [w, v]
                    fast += [avenue, avenue]
    fast = np.asarray(fast)
    length = rng.uniform(0.8, 1.2, len(tails)).round(3)
    speed = np.where(fast, 1.0, 0.6)
    attributes = pd.DataFrame({"capacity": np.where(fast, 2000.0, 800.0), "length": length,
                               "free_flow_time": (length / speed).round(4), "b": 0.15, "power": 4.0, "speed": speed,
                               "toll": 0.0, "link_type": np.where(fast, 2, 1).astype(float)})
    zones = N if centroids is None else centroids
    # Grid node g gets index position[g]: the zones (spread evenly) first, then the others.
    chosen = np.linspace(0, N - 1, zones).round().astype(np.int64)
    order = np.r_[chosen, np.setdiff1d(np.arange(N), chosen)]
    position = np.empty(N, dtype=np.int64)
    position[order] = np.arange(N)
    tails, heads = position[np.asarray(tails)], position[np.asarray(heads)]
    labels = order + 1
    network = Network(tails, heads, N, labels,
                      np.array([f"{labels[u]}-{labels[v]}" for u, v in zip(tails, heads)], dtype=object), attributes,
                      first_thru_node=0, name=f"grid-{rows}x{cols}")
    weight = rng.uniform(0.5, 1.5, zones)
    trips = np.round(100 * np.outer(weight, weight), 1)
    np.fill_diagonal(trips, 0.0)
    return network, trips
