"""Road networks and observed routes: readers (TNTP, arc tables), route validation, an exact
batched shortest-route oracle and a generator of observed routes (BPR link times)."""

from .network import Network, NetworkInputError, incidence, usable_arcs
from .oracle import RouteOracleError, shortest_routes
from .tntp import read_arc_table, read_network, read_tntp_network, read_tntp_trips

__all__ = ["Network", "NetworkInputError", "RouteOracleError", "incidence", "read_arc_table", "read_network",
           "read_tntp_network", "read_tntp_trips", "shortest_routes", "usable_arcs"]
