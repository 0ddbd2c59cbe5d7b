"""MOM from observed routes: learn arc costs of a road network from the routes travellers took.

Two cost models, one convex QP (`solvers.network_margin`):

* per-arc: c_t = Theta z_t, Theta (n_arcs, d): the paper's model, one coefficient per arc and
  context feature. Flexible; needs many routes through every arc to pin its row down.
* shared: c_ta = sum_jk Theta_jk F_aj z_tk, Theta (q, d): every arc attribute F_a (free-flow
  time, length, capacity, ...) times every context feature, the form route-choice studies
  estimate: q x d coefficients whatever the network's size, so it transfers to arcs that few
  routes use.

Only the routes are needed, never the costs (the dual formulation of MOM: no basis choice on
these degenerate LPs).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from ..solvers import policy
from ..solvers.network_margin import (NetworkSamples, incidence_matrix, network_margin_certificate, network_samples,
                                      solve_network_margin)
from ..solvers.policy import DualFormulationTooLarge
from ..blas_threads import one_blas_thread
from .base import POSITIVE, CostModel, NotFittedError, StrOptions, check_features, estimator_hyperparameters

logger = logging.getLogger(__name__)

ROUTE_SOLVERS = ("auto", "cvxpy")
#: A row of the dense method carries flow above this (its interior-point multipliers are never 0).
FLOW_CARRIED = 1e-7


@estimator_hyperparameters
class RouteMOM(CostModel):
    """MOM on a network LP from observed routes (x* only).

    Hyperparameters:
        lam: regularization weight (> 0); objective (lam/2)||Theta||^2 + mean hinge.
        solver: "auto" (`policy.route_per_arc_method`: the per-arc model with every off-route
            arc usable by MOM's dense dual formulation where its memory check passes, else the
            working sets of `solvers.network_margin`) or "cvxpy" (the whole QP, the reference
            for small networks).
        tol: the certificate's bound on the relative duality gap; a fit above it raises.

    Learned: coef_ (n_arcs or q, d), objective_, certificate_ (dict: objective, lower_bound,
    relative_gap, equality_residual, flow_residual), potentials_ (T, nodes), flows_ (T, n_arcs)
    the dual flows, n_iter_ (working-set rounds), solver_info_ (dict), n_features_in_,
    arc_features_ (the F the model was fitted with, or None).
    """

    needs_costs: ClassVar[bool] = False
    _parameter_constraints: ClassVar[dict] = {
        "lam": [POSITIVE],
        "solver": [StrOptions(set(ROUTE_SOLVERS))],
        "tol": [POSITIVE],
    }

    lam: float = 1e-2
    solver: str = "auto"
    tol: float = 1e-6

    def fit(self, Z, X, *, tails, heads, n_nodes: int, arc_features=None, usable=None):
        """Fit from contexts Z (T, d) and routes X (T, n_arcs) 0/1 on the network (tails, heads)."""
        Z = check_features(Z)
        data = network_samples(tails, heads, n_nodes, X, Z, arc_features, usable)
        started = time.perf_counter()
        dense_network = _dense_per_arc_fits(data) if self.solver == "auto" else None
        fitted, dense_failure = None, None
        if self.solver == "auto" and policy.route_per_arc_method(dense_network is not None) == "dense":
            try:
                fitted = _fit_dense_per_arc(data, self.lam, dense_network)
            except _DenseDoesNotApply as reason:
                fitted, dense_failure = None, str(reason)
                logger.warning("RouteMOM(lam=%g): the dense dual formulation does not apply (%s); fitting by the "
                               "detour cycles", self.lam, reason)
        if fitted is not None:
            Theta, potentials, flows, info = fitted
            certificate = network_margin_certificate(Theta, potentials, flows, data, self.lam)
            rounds = info["iterations"]
        elif self.solver == "auto":
            with one_blas_thread():  # many small BLAS calls: spinning threads only slow them
                result = solve_network_margin(data, self.lam)
            Theta, potentials, flows = result.solution
            certificate, rounds = result.certificate, result.iterations
            info = dict(result.info(), rounds=rounds, history=result.extra["history"])
            if dense_failure is not None:
                info["dense_failure"] = dense_failure
        else:
            Theta, potentials, flows = solve_network_margin_cvxpy(data, self.lam)
            certificate = network_margin_certificate(Theta, potentials, flows, data, self.lam)
            rounds, info = 1, dict(solver="cvxpy")
        if not -self.tol <= certificate["relative_gap"] <= self.tol:
            # Below -tol weak duality is broken: the point or its flows are not feasible enough
            # for the objective and the bound to mean anything.
            side = "above tol" if certificate["relative_gap"] > 0 else "below -tol (primal under its own lower bound)"
            raise UncertifiedFit(f"RouteMOM(lam={self.lam}): the solution's certified relative duality gap "
                                 f"{certificate['relative_gap']:.2e} is {side}={self.tol} (route equality residual "
                                 f"{certificate['equality_residual']:.1e}, flow residual {certificate['flow_residual']:.1e})")
        info.update(seconds=time.perf_counter() - started, certificate_gap=certificate["relative_gap"])
        self.coef_ = Theta
        self.objective_ = certificate["objective"]
        self.certificate_ = certificate
        self.potentials_, self.flows_ = potentials, flows
        self.n_iter_ = rounds
        self.solver_info_ = info
        self.n_features_in_ = Z.shape[1]
        self.arc_features_ = None if arc_features is None else np.asarray(arc_features, dtype=float)
        return self

    def predict(self, Z, arc_features=None) -> np.ndarray:
        """Predicted arc costs (T, n_arcs) for contexts Z; the shared model may be given other
        arc features (another network's arcs, in the fitted attributes' order)."""
        if not hasattr(self, "coef_"):
            raise NotFittedError("RouteMOM is not fitted yet; call fit first")
        Z = check_features(Z)
        if Z.shape[1] != self.n_features_in_:
            raise ValueError(f"Z has {Z.shape[1]} features but the model was fitted with {self.n_features_in_}")
        F = self.arc_features_ if arc_features is None else np.asarray(arc_features, dtype=float)
        if F is None:
            return Z @ self.coef_.T
        if F.ndim != 2 or F.shape[1] != self.coef_.shape[0]:
            raise ValueError(f"arc features must have {self.coef_.shape[0]} columns; got {F.shape}")
        return Z @ self.coef_.T @ F.T

    predict_cost = predict


class UncertifiedFit(RuntimeError):
    """The solution's duality gap is outside [-tol, tol]: no fit is returned."""


@dataclass(frozen=True)
class _DenseNetwork:
    """The network the dense method fits: the user's arcs on `n_nodes` nodes, each TNTP zone
    split in two (its out-arcs leave one node, its in-arcs enter another: no route can pass
    through it, whatever the sample), so that every sample's LP has one constraint matrix.
    absent (T, n): the arcs sample t may not use (None: none); node_of (T, user's nodes): the
    node of the split network whose potential is the user's node's in sample t, -1 where none
    (a node no arc touches)."""

    tails: np.ndarray
    heads: np.ndarray
    n_nodes: int
    absent: np.ndarray | None
    node_of: np.ndarray

    def standard_form(self) -> np.ndarray:
        """The equality rows (nodes but the last, -1 at each arc's tail: the convention of
        `lp.GridShortestPath`)."""
        return -incidence_matrix(self.tails, self.heads, self.n_nodes).toarray()[:-1]


def _dense_network(data: NetworkSamples) -> _DenseNetwork | None:
    """The network of the dense method, or None when the arcs a sample may not use are not
    those of TNTP zones (out of a zone but the origin, into a zone but the destination:
    `networks.usable_arcs`), which one constraint matrix cannot express."""
    T, N = data.T, data.n_nodes
    absent = ~(data.rows | data.routes)
    if not absent.any():
        return _DenseNetwork(data.tails, data.heads, N, None, np.broadcast_to(np.arange(N), (T, N)))
    # A zone: a node whose every arc some sample that neither starts nor ends there may not use.
    origins, destinations = data.origins, data.destinations
    touching = abs(incidence_matrix(data.tails, data.heads, N))
    present_arcs = np.asarray(touching @ (~absent).T.astype(float)).T  # (T, N)
    has_arcs = np.asarray(touching.sum(axis=1)).ravel() > 0
    ends = np.zeros((T, N), dtype=bool)
    ends[np.arange(T), origins] = ends[np.arange(T), destinations] = True
    candidate = ((present_arcs == 0) & has_arcs[None, :] & ~ends).any(axis=0)
    # A thoroughfare node reached only through zones looks like one; the zones explain it.
    reached_only_from_candidates = np.asarray((touching @ touching.T) @ ~candidate).ravel() == 0
    for zone in (candidate, candidate & ~reached_only_from_candidates):
        expected = ((zone[data.tails][None, :] & (data.tails[None, :] != origins[:, None]))
                    | (zone[data.heads][None, :] & (data.heads[None, :] != destinations[:, None])))
        if np.array_equal(absent, expected):
            break
    else:
        return None
    # Split node ids: v (a thoroughfare, or a zone's out side) and N + v (a zone's in side),
    # then numbered in order among those some arc touches.
    heads = np.where(zone[data.heads], N + data.heads, data.heads)
    used = np.unique(np.r_[data.tails, heads])
    number = np.full(2 * N, -1, dtype=np.int64)
    number[used] = np.arange(used.size)
    node_of = np.broadcast_to(number[:N], (T, N)).copy()
    # A zone's potential is its out side's where it is the origin, else its in side's.
    zones = np.flatnonzero(zone)
    node_of[:, zones] = np.where(zones[None, :] == origins[:, None], number[zones][None, :],
                                 number[N + zones][None, :])
    return _DenseNetwork(number[data.tails], number[heads], int(used.size), absent, node_of)


def _tree_bases(network: _DenseNetwork, data: NetworkSamples) -> np.ndarray | None:
    """(T, nodes - 1) sorted arcs of a spanning tree per sample that holds its route and spans
    the nodes of its usable arcs with usable arcs alone (absent arcs only hang off it, so no
    usable arc's reduced cost depends on them: `mom_dual_problem.dual_block_problem`'s
    condition); None when some sample's usable arcs do not connect their nodes.

    The trees are breadth-first from the route (then from the usable arcs' nodes): short tree
    paths keep the reduced-cost rows short. A minimum spanning tree of arbitrary shape made the
    block method stall on Anaheim even with no arc absent (T = 30: 201 s CPU with a retry,
    against 56 s from `lp.basis_from_solution`'s bases; record 033)."""
    import scipy.sparse.csgraph as csgraph

    V = network.n_nodes
    low, high = np.minimum(network.tails, network.heads), np.maximum(network.tails, network.heads)
    pair = low * V + high
    bases = np.empty((data.T, V - 1), dtype=np.int64)

    def grow(arcs_allowed, sources):
        """Tree edges (as arcs) of a breadth-first search over arcs_allowed from the sources."""
        first = np.flatnonzero(arcs_allowed)
        ends = np.r_[network.tails[first], network.heads[first], np.full(sources.size, V)]
        other = np.r_[network.heads[first], network.tails[first], sources]
        graph = sp.csr_matrix((np.ones(ends.size), (ends, other)), shape=(V + 1, V + 1))
        order, predecessor = csgraph.breadth_first_order(graph, V, directed=True, return_predecessors=True)
        arc_of_pair = dict(zip(pair[first][::-1].tolist(), first[::-1].tolist()))  # the lowest index kept
        reached = order[order != V]
        inner = reached[predecessor[reached] != V]
        parent = predecessor[inner]
        return [arc_of_pair[int(min(u, v)) * V + int(max(u, v))] for u, v in zip(inner, parent)], reached

    for t in range(data.T):
        route = data.routes[t]
        usable = ~network.absent[t]
        route_nodes = np.unique(np.r_[network.tails[route], network.heads[route]])
        first_edges, reached = grow(usable & ~route, route_nodes)
        live = np.unique(np.r_[network.tails[usable], network.heads[usable]])
        if reached.size != live.size:
            return None
        rest_edges, everything = grow(np.ones_like(usable), reached)
        arcs = np.sort(np.r_[np.flatnonzero(route), first_edges, rest_edges].astype(np.int64))
        if arcs.size != V - 1 or everything.size != V:
            return None
        bases[t] = arcs
    return bases


def _dense_per_arc_fits(data: NetworkSamples) -> _DenseNetwork | None:
    """The network MOM's dense dual formulation fits (`policy.route_per_arc_method`), or None:
    per-arc model, the arcs a sample may not use those of TNTP zones (`_dense_network`), one
    connected network, and its memory check passes."""
    import scipy.sparse.csgraph as csgraph

    if data.F is not None:
        return None
    network = _dense_network(data)
    if network is None:
        return None
    from .mom_dual import check_dual_formulation_fits

    incidence = incidence_matrix(network.tails, network.heads, network.n_nodes)
    # Nodes joined by an arc (nodes x nodes): a node no arc touches is a component of its own.
    components, _ = csgraph.connected_components(incidence @ incidence.T, directed=False)
    if components != 1:
        return None
    try:
        check_dual_formulation_fits(network.standard_form(), data.routes.astype(float), data.d, 1)
    except DualFormulationTooLarge:
        return None
    return network


def _fit_dense_per_arc(data: NetworkSamples, lam: float, network: _DenseNetwork):
    """(Theta (n, d), potentials (T, nodes), row flows (T, n) in [0, 1], info) of the per-arc
    model by MOM's dense dual formulation (`methods.mom_dual`'s block interior-point method)
    on the standard form of `network`: duals y are the potentials negated (0 at the dropped last
    node), its flows (divided by T there) the row flows."""
    from . import mom_dual
    from .base import resolve_lp
    from .mom_solve import solve_mom

    A = network.standard_form()
    X = data.routes.astype(float)
    if network.absent is None:
        basis = resolve_lp(A, X @ A.T, None).basis_from_solution(X)
    else:
        basis = _tree_bases(network, data)
        if basis is None:
            raise _DenseDoesNotApply("some sample's usable arcs do not connect their nodes")
    try:
        Theta, info = solve_mom(None, data.Z, lam, None, "auto", A=A, formulation="dual", basis=basis, X=X,
                                threads=1, absent=network.absent)
    except mom_dual.BlockMethodFailed as failure:
        # With absent columns there is no whole-problem fallback of the dense method's own.
        raise _DenseDoesNotApply(str(failure)) from failure
    y, flows = info.pop("duals"), info.pop("flows")
    if flows is None:
        raise RuntimeError("the dense dual formulation returned no flows to certify its fit")
    split = np.zeros((data.T, network.n_nodes))
    split[:, :-1] = -y
    rows = np.arange(data.T)[:, None]
    potentials = np.where(network.node_of >= 0, split[rows, np.maximum(network.node_of, 0)], 0.0)
    row_flows = np.where(data.rows, np.clip(flows * data.T, 0.0, 1.0), 0.0)
    info = dict(info, solver="dense_dual_formulation", iterations=int(info.get("iterations", 1)),
                working_rows=int((row_flows > FLOW_CARRIED).sum()), zones_split=network.absent is not None)
    return Theta, potentials, row_flows, info


class _DenseDoesNotApply(RuntimeError):
    """The dense dual formulation cannot take this problem (found while building it)."""


def solve_network_margin_cvxpy(data: NetworkSamples, lam: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The whole QP (every row) by cvxpy/Clarabel: (Theta, potentials (T, nodes), row flows (T, n))."""
    import cvxpy as cp

    T, n, N = data.T, data.n, data.n_nodes
    Theta = cp.Variable((data.q, data.d))
    Y = cp.Variable((T, N))
    C = data.Z @ Theta.T if data.F is None else data.Z @ Theta.T @ data.F.T
    incidence = incidence_matrix(data.tails, data.heads, N)
    reduced = C - Y @ incidence
    rt, ra = np.nonzero(data.routes)
    wt, wa = np.nonzero(data.rows)
    flat = cp.reshape(reduced, (T * n,), order="C")
    s = cp.Variable(wt.size, nonneg=True)
    margin = flat[wt * n + wa] >= 1 - s
    constraints = [flat[rt * n + ra] == 0, margin, Y[np.arange(T), data.destinations] == 0]
    problem = cp.Problem(cp.Minimize(0.5 * lam * cp.sum_squares(Theta) + cp.sum(s) / T), constraints)
    problem.solve(solver=cp.CLARABEL)
    if problem.status != cp.OPTIMAL:
        raise RuntimeError(f"cvxpy/Clarabel did not solve the network MOM QP (status {problem.status})")
    flows = np.zeros((T, n))
    flows[wt, wa] = np.clip(np.asarray(margin.dual_value) * T, 0.0, 1.0)
    return np.asarray(Theta.value), np.asarray(Y.value), flows


__all__ = ["RouteMOM", "ROUTE_SOLVERS", "solve_network_margin_cvxpy"]
