"""Helpers of the networks tests: the real TNTP networks (skipped when absent) and a HiGHS
HiGHS reference for shortest routes."""

from __future__ import annotations

import os
from pathlib import Path

import highspy
import numpy as np
import pytest

from mom_pipeline.lp.highs import _new_highs
from mom_pipeline.networks import incidence

NETWORKS_DIR = Path(os.environ.get("MOM_NETWORKS_DIR", "/work/shared/networks"))
NET_FILES = {
    "SiouxFalls": "SiouxFalls/SiouxFalls_net.tntp",
    "Berlin-Friedrichshain": "Berlin-Friedrichshain/friedrichshain-center_net.tntp",
    "Anaheim": "Anaheim/Anaheim_net.tntp",
}


def network_file(name: str) -> Path:
    path = NETWORKS_DIR / NET_FILES[name]
    if not path.is_file():
        pytest.skip(f"{path} is absent (set MOM_NETWORKS_DIR to the folder of the TNTP networks)")
    return path


def highs_routes(network, costs, origins, destinations, usable):
    """(routes, objectives) of min c'x s.t. incidence x = e_o - e_d, 0 <= x <= (usable ? inf : 0), by HiGHS."""
    A = incidence(network).tocsc()
    T, n = costs.shape
    highs = _new_highs()
    routes, values = np.zeros((T, n)), np.zeros(T)
    for t in range(T):
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = n, network.n_nodes
        lp.col_cost_ = costs[t].astype(float)
        lp.col_lower_ = np.zeros(n)
        lp.col_upper_ = np.where(usable[t], highspy.kHighsInf, 0.0)
        b = np.zeros(network.n_nodes)
        b[origins[t]], b[destinations[t]] = 1.0, -1.0
        lp.row_lower_ = b
        lp.row_upper_ = b
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = A.indptr.astype(np.int32)
        lp.a_matrix_.index_ = A.indices.astype(np.int32)
        lp.a_matrix_.value_ = A.data.astype(float)
        highs.passModel(lp)
        highs.run()
        assert highs.getModelStatus() == highspy.HighsModelStatus.kOptimal, t
        routes[t] = np.asarray(highs.getSolution().col_value)
        values[t] = highs.getInfo().objective_function_value
    return routes, values
