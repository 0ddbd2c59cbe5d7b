"""Shortest routes by HiGHS (the network LP solved as a general LP): the reference that tests and
benchmarks check `oracle.shortest_routes` against."""

from __future__ import annotations

import highspy
import numpy as np

from ..lp.highs import _new_highs
from .network import Network, incidence


def highs_shortest_routes(network: Network, costs, origins, destinations, usable=None) -> tuple[np.ndarray, np.ndarray]:
    """(routes (T, n), objectives (T,)) of min c_t'x s.t. incidence x = e_o - e_d,
    0 <= x <= (usable ? inf : 0), one HiGHS simplex solve per sample (warm-started)."""
    costs = np.atleast_2d(np.asarray(costs, dtype=float))
    T, n = costs.shape
    usable = np.ones((T, n), dtype=bool) if usable is None else np.asarray(usable, dtype=bool)
    A = incidence(network).tocsc()
    highs = _new_highs()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, network.n_nodes
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(float)
    routes, values = np.zeros((T, n)), np.zeros(T)
    columns, rows = np.arange(n, dtype=np.int32), np.arange(network.n_nodes, dtype=np.int32)
    for t in range(T):
        b = np.zeros(network.n_nodes)
        b[origins[t]], b[destinations[t]] = 1.0, -1.0
        upper = np.where(usable[t], highspy.kHighsInf, 0.0)
        if t == 0:
            lp.col_cost_, lp.col_lower_, lp.col_upper_ = costs[t], np.zeros(n), upper
            lp.row_lower_, lp.row_upper_ = b, b
            highs.passModel(lp)
        else:  # same matrix: new costs, bounds and supplies, warm-started from the last basis
            highs.changeColsCost(n, columns, costs[t])
            highs.changeColsBounds(n, columns, np.zeros(n), upper)
            highs.changeRowsBounds(network.n_nodes, rows, b, b)
        highs.run()
        status = highs.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError(f"sample {t}: HiGHS ended with {highs.modelStatusToString(status)}")
        routes[t] = np.asarray(highs.getSolution().col_value)
        values[t] = highs.getInfo().objective_function_value
    return routes, values
