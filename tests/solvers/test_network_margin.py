"""The working set over arcs (solvers.network_margin) against the whole QP (cvxpy) and the
dual formulation's block method, with its certificate, on grids and on a network with cycles."""

import logging

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from mom_pipeline.methods import MOM
from mom_pipeline.methods.route_mom import RouteMOM
from mom_pipeline.problems import generate_shortest_path
from mom_pipeline.solvers.network_margin import network_samples, route_order, solve_network_margin


def grid_routes(grid=5, T=60, seed=0, degree=4, n_features=5):
    trial = generate_shortest_path(n_train=T, n_test=1, degree=degree, grid=(grid, grid), n_features=n_features,
                                   seed=seed)
    X = trial.lp.solve(trial.train.C).x.round()
    arcs = trial.lp.structure.arcs
    return trial, X, arcs[:, 0], arcs[:, 1], grid * grid


def two_way_network(seed=0, T=40, d=3):
    """A random strongly connected graph with two-way roads, costs linear in z plus noise,
    routes = exact shortest paths (scipy's Dijkstra on positive costs)."""
    rng = np.random.default_rng(seed)
    n_nodes = 12
    pairs = {(i, (i + 1) % n_nodes) for i in range(n_nodes)}
    while len(pairs) < 22:
        i, j = rng.choice(n_nodes, 2, replace=False)
        pairs.add((min(i, j), max(i, j)))
    arcs = np.array([p for pair in sorted(pairs) for p in (pair, pair[::-1])])
    tails, heads = arcs[:, 0], arcs[:, 1]
    n = len(arcs)
    Z = np.column_stack([rng.uniform(0, 1, (T, d - 1)), np.ones(T)])
    true = rng.uniform(0.5, 2.0, (n, d))
    C = Z @ true.T * rng.uniform(0.9, 1.1, (T, n))
    X = np.zeros((T, n))
    for t in range(T):
        o, dest = rng.choice(n_nodes, 2, replace=False)
        graph = sp.csr_matrix((C[t], (tails, heads)), shape=(n_nodes, n_nodes))
        _, pred = dijkstra(graph, indices=o, return_predecessors=True)
        node = dest
        while node != o:
            arc = np.flatnonzero((tails == pred[node]) & (heads == node))[0]
            X[t, arc] = 1
            node = pred[node]
    return Z, X, tails, heads, n_nodes, rng


@pytest.mark.parametrize("lam", [pytest.param(1e-3, marks=pytest.mark.slow), 1e-1])
def test_grid_equals_whole_qp_and_dual_formulation(lam):
    trial, X, tails, heads, n_nodes = grid_routes()
    Z = trial.train.Z
    fast = RouteMOM(lam=lam).fit(Z, X, tails=tails, heads=heads, n_nodes=n_nodes)
    reference = RouteMOM(lam=lam, solver="cvxpy").fit(Z, X, tails=tails, heads=heads, n_nodes=n_nodes)
    dual = MOM(lam=lam, formulation="dual").fit(Z, X, lp=trial.lp)
    assert fast.certificate_["relative_gap"] <= 1e-8
    assert fast.certificate_["equality_residual"] <= 1e-8
    assert abs(fast.objective_ - reference.objective_) <= 1e-6 * reference.objective_
    assert abs(fast.objective_ - dual.objective_) <= 1e-6 * dual.objective_
    assert np.allclose(fast.coef_, dual.coef_, atol=1e-4 * np.abs(dual.coef_).max())
    # Every arc usable and the dense method within memory: the policy's dense path.
    assert fast.solver_info_["solver"] == "dense_dual_formulation"
    detours = solve_network_margin(network_samples(tails, heads, n_nodes, X, Z), lam, method="detours")
    assert abs(detours.objective - fast.objective_) <= 1e-7 * fast.objective_


def test_per_arc_fit_takes_the_detours_when_the_dense_method_does_not_fit(monkeypatch):
    from mom_pipeline.methods import mom_dual
    from mom_pipeline.solvers.policy import DualFormulationTooLarge

    trial, X, tails, heads, n_nodes = grid_routes(T=30, seed=4)
    Z = trial.train.Z
    dense = RouteMOM(lam=1e-2).fit(Z, X, tails=tails, heads=heads, n_nodes=n_nodes)

    def too_large(*args, **kwargs):
        raise DualFormulationTooLarge("no memory for the dense method")

    monkeypatch.setattr(mom_dual, "check_dual_formulation_fits", too_large)
    detours = RouteMOM(lam=1e-2).fit(Z, X, tails=tails, heads=heads, n_nodes=n_nodes)
    assert dense.solver_info_["solver"] == "dense_dual_formulation"
    assert detours.solver_info_["path"] == "network_detours"
    assert abs(dense.objective_ - detours.objective_) <= 1e-7 * detours.objective_
    assert detours.certificate_["relative_gap"] <= 1e-8 and dense.certificate_["relative_gap"] <= 1e-8


def zone_grid_routes(rows=4, zones=4, T=60, seed=0, d=3):
    """Routes between the first `zones` nodes of a grid of two-way streets made TNTP zones
    (no route passes through one), under costs linear in the contexts."""
    import dataclasses

    from mom_pipeline.networks import shortest_routes, usable_arcs
    from mom_pipeline.networks.generate import grid_network

    network, _ = grid_network(rows, rows, seed=seed, centroids=zones)
    network = dataclasses.replace(network, first_thru_node=zones)
    rng = np.random.default_rng(seed)
    Theta = np.c_[rng.uniform(1, 2, network.n_arcs), 0.3 * rng.normal(size=(network.n_arcs, d - 1))]
    Z = np.c_[np.ones(T), rng.normal(size=(T, d - 1))]
    o = rng.integers(0, zones, T)
    dest = (o + rng.integers(1, zones, T)) % zones
    usable = usable_arcs(network, o, dest)
    X = shortest_routes(network, np.maximum(Z @ Theta.T, 0.05), o, dest, usable)
    return Z, X, network, usable


@pytest.mark.slow
@pytest.mark.parametrize("lam", [1e-2, 1e-3])
def test_zone_network_per_arc_by_the_dense_method_equals_the_whole_qp(lam):
    Z, X, network, usable = zone_grid_routes()
    kwargs = dict(tails=network.tails, heads=network.heads, n_nodes=network.n_nodes, usable=usable)
    fast = RouteMOM(lam=lam).fit(Z, X, **kwargs)
    reference = RouteMOM(lam=lam, solver="cvxpy").fit(Z, X, **kwargs)
    # The zones split in two and the arcs a sample may not use left out: the dense path.
    assert fast.solver_info_["solver"] == "dense_dual_formulation" and fast.solver_info_["zones_split"]
    assert fast.certificate_["relative_gap"] <= 1e-8 and fast.certificate_["equality_residual"] <= 1e-8
    assert abs(fast.objective_ - reference.objective_) <= 1e-6 * reference.objective_
    assert (fast.flows_[~usable] == 0).all()
    detours = solve_network_margin(network_samples(network.tails, network.heads, network.n_nodes, X, Z, None, usable),
                                   lam, method="detours")
    assert abs(detours.objective - fast.objective_) <= 1e-7 * fast.objective_


def test_unusable_arcs_that_are_not_zones_leave_the_dense_method():
    Z, X, network, usable = zone_grid_routes(T=30, seed=2)
    usable = usable.copy()
    usable[0, np.flatnonzero(~X[0].astype(bool) & usable[0])[0]] = False  # one thoroughfare arc closed
    fit = RouteMOM(lam=1e-2).fit(Z, X, tails=network.tails, heads=network.heads, n_nodes=network.n_nodes,
                                 usable=usable)
    assert fit.solver_info_.get("solver") != "dense_dual_formulation"
    assert fit.certificate_["relative_gap"] <= 1e-8


def test_a_dense_failure_with_absent_columns_falls_back_to_the_detours(monkeypatch, caplog):
    from mom_pipeline.methods import mom_dual

    Z, X, network, usable = zone_grid_routes(T=30, seed=3)

    def stalls(*args, **kwargs):
        raise mom_dual._BlockStalled("forced stall")

    monkeypatch.setattr(mom_dual, "_block_solve", stalls)
    with caplog.at_level(logging.WARNING, logger="mom_pipeline.methods.route_mom"):
        fit = RouteMOM(lam=1e-2).fit(Z, X, tails=network.tails, heads=network.heads, n_nodes=network.n_nodes,
                                     usable=usable)
    assert "forced stall" in fit.solver_info_["dense_failure"] and "detour cycles" in caplog.text
    assert fit.solver_info_["path"] == "network_detours" and fit.certificate_["relative_gap"] <= 1e-8


def test_absent_columns_between_present_ones_are_refused():
    from mom_pipeline.methods.mom_dual_problem import dual_block_problem

    # Nodes 0, 1 (a zone), 2, 3; the route 0 -> 3; the zone's arcs 0 -> 1 and 1 -> 2 absent.
    tails, heads = np.array([0, 1, 2, 0]), np.array([1, 2, 3, 3])
    A = -sp.csr_matrix((np.r_[np.ones(4), -np.ones(4)], (np.r_[tails, heads], np.r_[np.arange(4), np.arange(4)])),
                       shape=(4, 4)).toarray()[:-1]
    X = np.array([[0.0, 0.0, 0.0, 1.0]])
    absent = np.array([[True, True, False, False]])
    Z = np.ones((1, 1))
    # A basis whose tree path from 2 to 3's other end runs through the zone: refused.
    with pytest.raises(ValueError, match="sample 0: a present column's reduced cost depends on an absent column"):
        dual_block_problem(A, np.array([[0, 1, 3]]), X, Z, None, absent)
    # The zone hanging off the tree by one arc: accepted; its arcs' rows and free reduced cost
    # leave the block (one emptied row is left: a block has at least one).
    problem = dual_block_problem(A, np.array([[0, 2, 3]]), X, Z, None, absent)
    assert problem.M.shape[1] == 1 and problem.absent_rows[0].tolist() == [True, False]
    assert not problem.M[0].any() and problem.row_columns[0].tolist() == [1, 2]


def test_network_with_cycles_per_arc_and_shared():
    Z, X, tails, heads, n_nodes, rng = two_way_network()
    F = np.column_stack([np.ones(len(tails)), rng.uniform(0, 1, (len(tails), 2))])
    for arc_features in (None, F):
        fast = RouteMOM(lam=1e-2).fit(Z, X, tails=tails, heads=heads, n_nodes=n_nodes, arc_features=arc_features)
        reference = RouteMOM(lam=1e-2, solver="cvxpy").fit(Z, X, tails=tails, heads=heads, n_nodes=n_nodes,
                                                           arc_features=arc_features)
        assert abs(fast.objective_ - reference.objective_) <= 1e-6 * reference.objective_
        assert fast.certificate_["relative_gap"] <= 1e-8
        assert fast.coef_.shape == ((len(tails) if arc_features is None else 3), Z.shape[1])


@pytest.mark.slow
def test_unusable_arcs_carry_no_margin():
    Z, X, tails, heads, n_nodes, rng = two_way_network(seed=1)
    usable = rng.uniform(size=X.shape) < 0.7
    usable |= X.astype(bool)
    fast = RouteMOM(lam=1e-2).fit(Z, X, tails=tails, heads=heads, n_nodes=n_nodes, usable=usable)
    reference = RouteMOM(lam=1e-2, solver="cvxpy").fit(Z, X, tails=tails, heads=heads, n_nodes=n_nodes, usable=usable)
    everything = RouteMOM(lam=1e-2).fit(Z, X, tails=tails, heads=heads, n_nodes=n_nodes)
    assert abs(fast.objective_ - reference.objective_) <= 1e-6 * reference.objective_
    assert fast.objective_ < everything.objective_  # fewer rows, a smaller hinge


def test_optimum_does_not_depend_on_the_starting_working_set(caplog):
    trial, X, tails, heads, n_nodes = grid_routes(T=30, seed=3)
    data = network_samples(tails, heads, n_nodes, X, trial.train.Z)
    with caplog.at_level(logging.DEBUG, logger="mom_pipeline.solvers.network_margin"):
        default = solve_network_margin(data, 1e-2, method="clarabel")
    # The last progress line gives the rounds and the certified gap.
    last = caplog.records[-1].getMessage()
    assert f"optimal after {default.iterations} rounds" in last
    assert f"certified relative gap {default.certificate['relative_gap']:.1e}" in last
    empty = solve_network_margin(data, 1e-2, working=np.zeros_like(data.rows), method="clarabel")
    assert abs(default.objective - empty.objective) <= 1e-8 * default.objective
    assert empty.iterations >= 2 and default.certificate["relative_gap"] <= 1e-8


@pytest.mark.parametrize("shared", [False, True])
def test_both_restricted_solvers_reach_the_same_optimum(shared):
    Z, X, tails, heads, n_nodes, rng = two_way_network(seed=4, T=30)
    F = rng.uniform(0.5, 1.5, (len(tails), 2)) if shared else None
    data = network_samples(tails, heads, n_nodes, X, Z, F)
    blocks = solve_network_margin(data, 1e-2, method="blocks")
    clarabel = solve_network_margin(data, 1e-2, method="clarabel")
    assert blocks.path.endswith("blocks") and clarabel.path.endswith("clarabel")
    assert abs(blocks.objective - clarabel.objective) <= 1e-7 * clarabel.objective
    assert max(blocks.certificate["relative_gap"], clarabel.certificate["relative_gap"]) <= 1e-8


def test_bad_routes_are_named():
    Z, X, tails, heads, n_nodes, _ = two_way_network(seed=2)
    long = int(np.flatnonzero(X.sum(axis=1) >= 3)[0])
    broken = X.copy()
    tails_used = tails[X[long] == 1]
    heads_used = heads[X[long] == 1]
    middle = np.flatnonzero((X[long] == 1) & np.isin(tails, heads_used) & np.isin(heads, tails_used))[0]
    broken[long, middle] = 0  # the route falls apart in two pieces
    with pytest.raises(ValueError, match=f"sample {long}: its route is not a simple path"):
        RouteMOM().fit(Z, broken, tails=tails, heads=heads, n_nodes=n_nodes)
    with pytest.raises(ValueError, match="sample 0: its route uses an arc marked unusable"):
        RouteMOM().fit(Z, X, tails=tails, heads=heads, n_nodes=n_nodes, usable=np.zeros_like(X, dtype=bool))


def test_mom_dual_formulation_recognizes_a_network_lp():
    """MOM(formulation="dual", solver="network") on the grid's standard form (a node-arc
    incidence with the sink's row dropped) equals the block method, and its duals and flows
    pass the dense method's certificate."""
    from mom_pipeline.methods.mom_dual_problem import dual_formulation_certificate

    trial, X, _, _, _ = grid_routes(T=40, seed=5)
    Z = trial.train.Z
    network = MOM(lam=1e-2, formulation="dual", solver="network").fit(Z, X, lp=trial.lp)
    dense = MOM(lam=1e-2, formulation="dual").fit(Z, X, lp=trial.lp)
    assert network.solver_info_["path"] == "network_detours"  # the per-arc model's default
    assert abs(network.objective_ - dense.objective_) <= 1e-7 * dense.objective_
    certificate = dual_formulation_certificate(network.coef_, network.dual_, network.flows_, trial.lp.A, X, Z, 1e-2)
    assert certificate["relative_gap"] <= 1e-7 and certificate["equality_residual"] <= 1e-7
    assert certificate["flow_residual"] <= 1e-7


def test_solver_network_refuses_an_lp_that_is_not_a_network():
    from mom_pipeline.problems import generate_knapsack

    trial = generate_knapsack(n_train=20, n_test=1, seed=0)
    X = trial.lp.solve(trial.train.C).x
    with pytest.raises(ValueError, match="node-arc incidence"):
        MOM(formulation="dual", solver="network").fit(trial.train.Z, X, lp=trial.lp)


def test_hyperparameters_are_checked_at_fit():
    Z, X, tails, heads, n_nodes, _ = two_way_network(seed=2, T=5)
    for bad in (dict(lam=0.0), dict(lam=float("nan")), dict(solver="fast"), dict(tol=-1.0)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            RouteMOM(**bad).fit(Z, X, tails=tails, heads=heads, n_nodes=n_nodes)


def test_a_pilot_start_reaches_the_same_optimum():
    from mom_pipeline.solvers.network_margin import PILOT_FACTOR, PILOT_MIN_SAMPLES

    T = PILOT_FACTOR * PILOT_MIN_SAMPLES
    Z, X, tails, heads, n_nodes, rng = two_way_network(seed=5, T=T)
    data = network_samples(tails, heads, n_nodes, X, Z, rng.uniform(0.5, 1.5, (len(tails), 2)))
    piloted = solve_network_margin(data, 1e-2)
    cold = solve_network_margin(data, 1e-2, pilot=False)
    assert piloted.extra["pilot"]["samples"] == PILOT_MIN_SAMPLES and cold.extra["pilot"] is None
    assert abs(piloted.objective - cold.objective) <= 1e-7 * cold.objective
    assert piloted.certificate["relative_gap"] <= 1e-8


def test_clarabel_on_the_cycle_basis_solves_the_arc_basis_problem():
    from mom_pipeline.solvers.network_cycles import short_cycle_basis
    from mom_pipeline.solvers.network_margin import initial_working_set
    from mom_pipeline.solvers.network_restricted import solve_restricted

    Z, X, tails, heads, n_nodes, _ = two_way_network(seed=6, T=25)
    data = network_samples(tails, heads, n_nodes, X, Z)
    working = initial_working_set(data)
    arcs = solve_restricted(data, working, 1e-2)
    cycles = solve_restricted(data, working, 1e-2, basis=short_cycle_basis(tails, heads, n_nodes))
    objective = [0.5 * 1e-2 * np.sum(r.Theta**2) + r.S.sum() / data.T for r in (arcs, cycles)]
    assert abs(objective[0] - objective[1]) <= 1e-7 * objective[0]
    # Both give the same reduced costs; the cycle basis's Theta has no potential part.
    from mom_pipeline.solvers.network_problem import incidence_matrix
    assert np.abs(incidence_matrix(tails, heads, n_nodes) @ cycles.Theta).max() <= 1e-12


def test_substituted_route_potentials_solve_the_equality_form():
    """The shared model's restricted QP with the route potentials substituted (no equality rows)
    has the equality form's optimum: objective, Theta and each sample's hinge (the slacks of one
    sample are not unique where free potentials can trade them)."""
    from mom_pipeline.solvers.network_margin import initial_working_set
    from mom_pipeline.solvers.network_restricted import solve_restricted

    Z, X, tails, heads, n_nodes, rng = two_way_network(seed=7, T=30)
    F = rng.uniform(0.5, 2.0, (len(tails), 2))
    data = network_samples(tails, heads, n_nodes, X, Z, F)
    # Every usable row: components off the route and rows between route nodes both occur.
    for working in (initial_working_set(data), data.rows):
        equality = solve_restricted(data, working, 1e-2)
        substituted = solve_restricted(data, working, 1e-2, orders=route_order(data))
        objective = [0.5 * 1e-2 * np.sum(r.Theta**2) + r.S.sum() / data.T for r in (equality, substituted)]
        assert abs(objective[0] - objective[1]) <= 1e-8 * objective[0]
        assert np.allclose(substituted.Theta, equality.Theta, atol=1e-6 * np.abs(equality.Theta).max())
        assert np.allclose(substituted.S.sum(axis=1), equality.S.sum(axis=1), atol=1e-6)


def _clarabel_failing_first(monkeypatch, failures: int):
    """clarabel.DefaultSolver whose first `failures` solves stop after one iteration (a real
    MaxIterations); the settings of every solve are kept."""
    import clarabel

    real, seen = clarabel.DefaultSolver, []

    def solver(P, q, A, b, cones, settings):
        seen.append((settings.static_regularization_constant, settings.static_regularization_proportional))
        if len(seen) <= failures:
            settings.max_iter = 1
        return real(P, q, A, b, cones, settings)

    monkeypatch.setattr(clarabel, "DefaultSolver", solver)
    return seen


def test_a_restricted_qp_clarabel_does_not_solve_is_tried_again_with_less_regularization(monkeypatch):
    from mom_pipeline.solvers.network_restricted import RETRY_STATIC_REGULARIZATION, RestrictedQPNotSolved

    Z, X, tails, heads, n_nodes, rng = two_way_network(seed=4, T=30)
    data = network_samples(tails, heads, n_nodes, X, Z, rng.uniform(0.5, 1.5, (len(tails), 2)))
    reference = solve_network_margin(data, 1e-2, method="clarabel", pilot=False)
    seen = _clarabel_failing_first(monkeypatch, failures=1)
    retried = solve_network_margin(data, 1e-2, method="clarabel", pilot=False)
    assert seen[1] == (RETRY_STATIC_REGULARIZATION, 0.0) and seen[0] != seen[1]
    assert abs(retried.objective - reference.objective) <= 1e-8 * reference.objective
    assert retried.certificate["relative_gap"] <= 1e-8
    _clarabel_failing_first(monkeypatch, failures=10**6)
    with pytest.raises(RestrictedQPNotSolved, match=r"MaxIterations after 1 iterations; with static regularization "
                                                    r"1e-10: MaxIterations after 1 iterations"):
        solve_network_margin(data, 1e-2, method="clarabel", pilot=False)


@pytest.mark.parametrize("gap, side", [(3e-4, "above tol"), (-2.6e-4, "below -tol")])
def test_a_fit_whose_gap_is_outside_the_tolerance_on_either_side_is_refused(monkeypatch, gap, side):
    """A positive gap above tol is not optimal; a negative one beyond tol breaks weak duality
    (seen at -2.6e-4 on a 40,000-link network): neither fit is returned."""
    import mom_pipeline.methods.route_mom as route_mom
    from mom_pipeline.solvers.network_margin import solve_network_margin as real_solve

    def with_gap(*args, **kwargs):
        result = real_solve(*args, **kwargs)
        result.certificate = dict(result.certificate, relative_gap=gap)
        return result

    Z, X, tails, heads, n_nodes, rng = two_way_network(seed=4, T=30)
    monkeypatch.setattr(route_mom, "solve_network_margin", with_gap)
    with pytest.raises(route_mom.UncertifiedFit, match=side):
        RouteMOM(lam=1e-2).fit(Z, X, tails=tails, heads=heads, n_nodes=n_nodes,
                               arc_features=rng.uniform(0.5, 1.5, (len(tails), 2)))
