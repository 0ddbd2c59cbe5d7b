"""Observed routes: read and validate a routes table against a network and the features table.

**routes** (one row per observation):

    id, origin, destination, nodes          e.g.  17, 1, 20, "1 3 12 13 24 21 20"
    id, origin, destination, arcs           e.g.  17, 1, 20, "1-3 3-12 12-13 13-24 24-21 21-20"

``origin`` and ``destination`` are node labels; ``nodes`` is the route's node labels in order
(separated by spaces, commas or semicolons), or ``arcs`` its arc labels in order (``tail-head``,
or the ids of an arc table's ``arc`` column; needed where parallel arcs make a node list
ambiguous). A table has one of the two columns.

Each row is checked; the first problem rejects the observation with the file, row (0-based
table position) and id, in the rejection report of the inverse pipeline (columns id, file,
row, reason):

* the id is missing or given twice; the origin or destination is not a node;
* the route is empty, names a node or arc that is not in the network, or steps between two
  nodes with no arc between them (it leaves the network);
* consecutive arcs do not meet (the route is not connected);
* it does not start at its origin or end at its destination;
* it visits a node twice (not a simple path);
* it passes through a zone (a node below TNTP's ``<FIRST THRU NODE>``) other than its ends;
* its id has no row in features.csv (and a features row without a route is rejected too).

on_invalid = "report" drops the rejected observations, each listed in the report; "raise" stops
at the first one (InverseInputError). Nothing is dropped without a report row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..inverse.schema import ID, INTERCEPT, InverseInputError, IssueLog, normalize_id
from ..inverse.tables import read_features
from ..inverse.validation import ON_INVALID, _raise_nothing_left, _raise_or_report
from .network import Network, usable_arcs

ROUTE_COLUMNS = ("nodes", "arcs")
_SEPARATORS = re.compile(r"[\s,;]+")


@dataclass(frozen=True, eq=False)
class RouteProblem:
    """Validated observations: ids (T,), features Z (T, d) named feature_names, routes X (T, n)
    0/1 arc incidence, origins / destinations (T,) 0-based node indices, on `network`."""

    ids: np.ndarray
    feature_names: tuple
    Z: np.ndarray
    X: np.ndarray
    origins: np.ndarray
    destinations: np.ndarray
    network: Network

    @property
    def n_samples(self) -> int:
        return len(self.ids)

    @property
    def usable(self) -> np.ndarray:
        """(T, n) the arcs each observation's route may use (TNTP zones)."""
        return usable_arcs(self.network, self.origins, self.destinations)

    def subset(self, index) -> "RouteProblem":
        index = np.asarray(index, dtype=np.int64)
        return RouteProblem(self.ids[index], self.feature_names, self.Z[index], self.X[index], self.origins[index],
                            self.destinations[index], self.network)


def _split(text) -> list[str]:
    if text is None or (isinstance(text, float) and np.isnan(text)):
        return []
    return [part for part in _SEPARATORS.split(str(text).strip()) if part]


def _node(label, nodes: dict, what: str) -> tuple[int | None, str | None]:
    key = normalize_id(label)
    if key is None:
        return None, f"the {what} is missing"
    if key not in nodes:
        return None, f"{what} {key!r} is not a node of the network"
    return nodes[key], None


def route_arcs(network: Network, origin: int, destination: int, nodes: list | None = None,
               arcs: list | None = None) -> tuple[list[int] | None, str | None]:
    """The arcs of one route given as node labels or arc labels, or (None, why it is invalid)."""
    labels = network.node_labels
    if nodes is not None:
        index = network.node_index()
        if len(nodes) < 2:
            return None, f"the route {' '.join(nodes) or '(empty)'} has fewer than two nodes"
        unknown = [v for v in nodes if v not in index]
        if unknown:
            return None, f"node {unknown[0]!r} is not in the network: the route leaves the network"
        path = [index[v] for v in nodes]
        arc_list = []
        for u, v in zip(path[:-1], path[1:]):
            between = network.arcs_between(u, v)
            if not between:
                return None, f"there is no arc {labels[u]}-{labels[v]}: the route leaves the network"
            if len(between) > 1:
                return None, (f"nodes {labels[u]} and {labels[v]} are joined by parallel arcs "
                              f"{[str(network.arc_labels[a]) for a in between]}: give the route in an 'arcs' column")
            arc_list.append(between[0])
    else:
        index = network.arc_index()
        if not arcs:
            return None, "the route is empty"
        unknown = [a for a in arcs if a not in index]
        if unknown:
            return None, f"arc {unknown[0]!r} is not in the network: the route leaves the network"
        arc_list = [index[a] for a in arcs]
        for a, b in zip(arc_list[:-1], arc_list[1:]):
            if network.heads[a] != network.tails[b]:
                return None, (f"the route is not connected: arc {network.arc_labels[a]} ends at node "
                              f"{labels[network.heads[a]]} but the next arc {network.arc_labels[b]} starts at node "
                              f"{labels[network.tails[b]]}")
        path = [int(network.tails[arc_list[0]])] + [int(network.heads[a]) for a in arc_list]
    if path[0] != origin:
        return None, f"the route starts at node {labels[path[0]]}, not at its origin {labels[origin]}"
    if path[-1] != destination:
        return None, f"the route ends at node {labels[path[-1]]}, not at its destination {labels[destination]}"
    seen = set()
    for v in path:
        if v in seen:
            return None, f"the route visits node {labels[v]} twice (a route is a simple path)"
        seen.add(v)
    zones = [v for v in path[1:-1] if v < network.first_thru_node]
    if zones:
        return None, (f"the route passes through zone node {labels[zones[0]]}: nodes below the first thru node "
                      f"{labels[network.first_thru_node]} are origins and destinations only")
    return arc_list, None


def _route_column(table: pd.DataFrame, log: IssueLog) -> str:
    given = [c for c in ROUTE_COLUMNS if c in table.columns]
    if len(given) != 1:
        log.fatal("routes", f"the routes table needs exactly one of the columns {list(ROUTE_COLUMNS)} (the route as "
                            f"node labels or arc labels); it has columns {list(table.columns)}")
    return given[0]


def read_routes(network: Network, table: pd.DataFrame, log: IssueLog) -> dict:
    """{id: (table row, origin, destination, arc list)} of the valid rows; the others rejected in `log`."""
    missing = [c for c in (ID, "origin", "destination") if c not in table.columns]
    if missing:
        log.fatal("routes", f"missing column(s) {missing}; the table has columns {list(table.columns)}")
    if not len(table):
        log.fatal("routes", "the table is empty (no observation)")
    column = _route_column(table, log)
    nodes = network.node_index()
    ids = [normalize_id(v) for v in table[ID].tolist()]
    counts = pd.Series([i for i in ids if i is not None], dtype=object).value_counts()
    valid, reported = {}, set()
    for r, (id, o_label, d_label, route) in enumerate(zip(ids, table["origin"], table["destination"], table[column])):
        if id is None:
            log.reject(None, "routes", r, "the id is missing")
            continue
        if counts[id] > 1:
            if id not in reported:
                log.reject(id, "routes", r, f"id {id!r} appears in rows {[k for k, i in enumerate(ids) if i == id]}: "
                                            "ids must be unique")
                reported.add(id)
            continue
        origin, why = _node(o_label, nodes, "origin")
        destination, why_d = _node(d_label, nodes, "destination") if why is None else (None, None)
        why = why or why_d
        if why is None and origin == destination:
            why = f"origin and destination are the same node {network.node_labels[origin]}"
        if why is None:
            parts = _split(route)
            arcs, why = route_arcs(network, origin, destination, **{column: parts})
        if why is not None:
            log.reject(id, "routes", r, why)
            continue
        valid[id] = (r, origin, destination, arcs)
    return valid


def validate_route_problem(network: Network, routes: pd.DataFrame, features: pd.DataFrame, *,
                           feature_columns=None, add_intercept: bool = True, on_invalid: str = "raise",
                           file_names: dict | None = None) -> tuple[RouteProblem, pd.DataFrame]:
    """RouteProblem of the valid observations (in the order of the features table) and the
    rejection report (id, file, row, reason; empty when clean). See the module docstring."""
    if on_invalid not in ON_INVALID:
        raise ValueError(f"on_invalid must be one of {ON_INVALID}; got {on_invalid!r}")
    log = IssueLog(file_names)
    f_ids, Z, _, feature_names = read_features(features, log, feature_columns, add_intercept)
    valid = read_routes(network, routes, log)
    route_ids = {normalize_id(v) for v in routes[ID].tolist()} - {None}
    for id in f_ids:
        if id not in route_ids:
            log.reject(id, "features", None, f"no row for id {id!r} in {log.file('routes')} (it is in "
                                             f"{log.file('features')})")
    feature_ids = {normalize_id(v) for v in features[ID].tolist()} - {None}
    for id, (r, *_rest) in valid.items():
        if id not in feature_ids:
            log.reject(id, "routes", r, f"no row for id {id!r} in {log.file('features')} (it is in "
                                        f"{log.file('routes')})")
    keep = [k for k, id in enumerate(f_ids) if id in valid and not log.rejected(id)]
    if not keep:
        _raise_nothing_left(log)
    report = _raise_or_report(log, on_invalid)
    kept_ids = [f_ids[k] for k in keep]
    X = np.zeros((len(keep), network.n_arcs))
    for t, id in enumerate(kept_ids):
        X[t, valid[id][3]] = 1.0
    problem = RouteProblem(ids=np.asarray(kept_ids, dtype=object), feature_names=tuple(feature_names), Z=Z[keep], X=X,
                           origins=np.array([valid[id][1] for id in kept_ids], dtype=np.int64),
                           destinations=np.array([valid[id][2] for id in kept_ids], dtype=np.int64), network=network)
    return problem, report


def validate_route_contexts(network: Network, table: pd.DataFrame, feature_names, *, add_intercept: bool = True,
                            file_name: str = "new_contexts") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """New contexts to route (id, origin, destination, the training feature columns) ->
    (ids, Z, origins, destinations). Any invalid row raises InverseInputError naming the file,
    row and id: a prescription is asked for every row."""
    log = IssueLog({"features": file_name, "new_contexts": file_name})
    columns = [c for c in feature_names if not (add_intercept and c == INTERCEPT)]
    missing = [c for c in (ID, "origin", "destination", *columns) if c not in table.columns]
    if missing:
        log.fatal("new_contexts", f"missing column(s) {missing}; the table has columns {list(table.columns)}")
    ids, Z, rows, _ = read_features(table, log, columns, add_intercept)
    nodes = network.node_index()
    origins, destinations = [], []
    for id, r in zip(ids, rows):
        o, why = _node(table["origin"].iloc[r], nodes, "origin")
        d, why_d = _node(table["destination"].iloc[r], nodes, "destination")
        why = why or why_d or (f"origin and destination are the same node {network.node_labels[o]}" if o == d else None)
        if why:
            log.reject(id, "new_contexts", int(r), why)
        origins.append(o)
        destinations.append(d)
    error = log.first_error()
    if error is not None:
        n_bad = len(log.report())
        raise InverseInputError(error.file, error.reason + (f" ({n_bad - 1} more invalid row(s))" if n_bad > 1 else ""),
                                error.row, error.id)
    return np.asarray(ids, dtype=object), Z, np.asarray(origins, dtype=np.int64), np.asarray(destinations, np.int64)
