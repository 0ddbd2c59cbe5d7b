"""A directed road network: arcs between nodes, arc attributes, and TNTP's zone rule.

Nodes are 0-based indices internally and keep the user's labels (``node_labels``) for every
message and output; arcs keep theirs (``arc_labels``: ``tail-head`` in node labels, or the
arc table's id column). TNTP zones: nodes with an index below ``first_thru_node`` are zones,
origins and destinations only; a route may pass through nodes >= first_thru_node only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp


class NetworkInputError(ValueError):
    """A network, trips or routes file that cannot be read; the message names the file and line or row."""

    def __init__(self, file: str | None, reason: str, line: int | None = None, what: str = "line"):
        self.file, self.line, self.reason = file, line, reason
        where = [part for part in (file and f"file {file!r}", line is not None and f"{what} {line}") if part]
        super().__init__(f"{', '.join(where)}: {reason}" if where else reason)


@dataclass(eq=False)
class Network:
    """tails, heads: (n,) 0-based node indices of every arc; n_nodes; node_labels (n_nodes,)
    and arc_labels (n,) as the user wrote them; attributes: one row per arc (capacity, length,
    free_flow_time, b, power, ...); first_thru_node: 0-based index, 0 = every node is a
    thoroughfare; name: the file or network it came from."""

    tails: np.ndarray
    heads: np.ndarray
    n_nodes: int
    node_labels: np.ndarray
    arc_labels: np.ndarray
    attributes: pd.DataFrame
    first_thru_node: int = 0
    name: str = "network"
    _arc_of_pair: dict = field(default=None, init=False, repr=False)

    def __post_init__(self):
        self.tails = np.asarray(self.tails, dtype=np.int64)
        self.heads = np.asarray(self.heads, dtype=np.int64)
        self.node_labels = np.asarray(self.node_labels, dtype=object)
        self.arc_labels = np.asarray(self.arc_labels, dtype=object)
        self.attributes = self.attributes.reset_index(drop=True)
        if not (self.tails.shape == self.heads.shape == self.arc_labels.shape) or len(self.attributes) != self.n_arcs:
            raise ValueError("tails, heads, arc_labels and attributes must have one entry per arc")
        if len(self.node_labels) != self.n_nodes:
            raise ValueError(f"{len(self.node_labels)} node labels for {self.n_nodes} nodes")

    @property
    def n_arcs(self) -> int:
        return int(self.tails.size)

    @property
    def zones(self) -> np.ndarray:
        """Indices of the zone nodes (origins and destinations only, never passed through)."""
        return np.arange(self.first_thru_node)

    def arcs_between(self, tail: int, head: int) -> list[int]:
        """The arcs tail -> head (more than one when the network has parallel arcs)."""
        if self._arc_of_pair is None:
            pairs: dict = {}
            for a, (u, v) in enumerate(zip(self.tails.tolist(), self.heads.tolist())):
                pairs.setdefault((u, v), []).append(a)
            self._arc_of_pair = pairs
        return self._arc_of_pair.get((int(tail), int(head)), [])

    def node_index(self) -> dict:
        """{label as text: index}, for reading node labels from tables."""
        return {str(label): i for i, label in enumerate(self.node_labels)}

    def arc_index(self) -> dict:
        """{arc label as text: index}."""
        return {str(label): a for a, label in enumerate(self.arc_labels)}

    def arc_table(self) -> pd.DataFrame:
        """One row per arc: arc label, tail and head labels, attributes (the arc table format)."""
        table = pd.DataFrame({"arc": self.arc_labels, "tail": self.node_labels[self.tails],
                              "head": self.node_labels[self.heads]})
        return pd.concat([table, self.attributes], axis=1)

    def route_nodes(self, route: np.ndarray, origin: int) -> list:
        """The node labels of a 0/1 route (n,) from `origin`, in order."""
        arcs = np.flatnonzero(np.asarray(route) > 0.5)
        next_arc = {int(self.tails[a]): int(a) for a in arcs}
        nodes, node = [self.node_labels[origin]], int(origin)
        for _ in range(arcs.size):
            a = next_arc[node]
            node = int(self.heads[a])
            nodes.append(self.node_labels[node])
        return nodes


def incidence(network: Network) -> sp.csr_matrix:
    """Node-arc incidence (n_nodes, n): +1 at each arc's tail, -1 at its head, so that a route
    x from o to d satisfies incidence @ x = e_o - e_d."""
    n = network.n_arcs
    rows = np.concatenate([network.tails, network.heads])
    data = np.concatenate([np.ones(n), -np.ones(n)])
    return sp.csr_matrix((data, (rows, np.tile(np.arange(n), 2))), shape=(network.n_nodes, n))


def usable_arcs(network: Network, origins, destinations=None) -> np.ndarray:
    """(T, n) bool: the arcs sample t may use. Routes pass through thoroughfare nodes only: an
    arc out of a zone (index below first_thru_node) is usable only when that zone is the
    sample's origin, and an arc into a zone only when that zone is its destination (without
    `destinations`: into any zone but the origin, as a one-to-all search from the origin
    needs). With nonnegative costs the shortest routes are the same as over every arc into a
    zone (a route never returns to its origin nor ends in another zone); MOM's margins are not:
    rows on arcs back into the origin would ask the costs of cycles through the origin's
    connectors for a margin that no observed route tells anything about
    (docs/decisions/033-zone-arcs.md)."""
    origins = np.asarray(origins, dtype=np.int64)
    zone_tail = network.tails < network.first_thru_node
    zone_head = network.heads < network.first_thru_node
    out_ok = ~zone_tail[None, :] | (network.tails[None, :] == origins[:, None])
    if destinations is None:
        in_ok = ~zone_head[None, :] | (network.heads[None, :] != origins[:, None])
    else:
        destinations = np.asarray(destinations, dtype=np.int64)
        in_ok = ~zone_head[None, :] | (network.heads[None, :] == destinations[:, None])
    return out_ok & in_ok
