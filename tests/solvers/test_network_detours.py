"""The per-arc model on detour cycles (solvers.network_detours, solvers.detour_ipm) against the
whole QP (cvxpy), the working set over arcs, and its own variants (pilot, warm rounds)."""

import cvxpy as cp
import numpy as np
import pytest
from test_network_margin import grid_routes, two_way_network

from mom_pipeline.methods.route_mom import RouteMOM
from mom_pipeline.solvers import network_detours
from mom_pipeline.solvers.detour_ipm import DetourBlocks, detour_qp
from mom_pipeline.solvers.network_detours import _predecessor_cycle, solve_network_detours
from mom_pipeline.solvers.network_margin import network_samples, solve_network_margin


def random_blocks(seed=0, T=7, q=4, d=3):
    """Blocks of different sizes, padded as `DetourSet.blocks` pads them; some rows share
    slacks."""
    rng = np.random.default_rng(seed)
    K, A = 5, 6
    rows, slacks = rng.integers(1, K + 1, T), rng.integers(2, A + 1, T)
    P, C, h = np.zeros((T, K, q)), np.zeros((T, K, A)), np.full((T, K), -1.0)
    for t in range(T):
        P[t, :rows[t]] = rng.normal(size=(rows[t], q))
        for k in range(rows[t]):
            used = rng.choice(slacks[t], rng.integers(1, slacks[t] + 1), replace=False)
            C[t, k, used] = 1.0
            h[t, k] = used.size
    Z = np.column_stack([rng.uniform(0.5, 1.5, (T, d - 1)), np.ones(T)])
    return DetourBlocks(P, C, h, Z, rows, slacks)


def cvxpy_detour_qp(blocks: DetourBlocks, lam: float, weight: float) -> float:
    W = cp.Variable((blocks.q, blocks.d))
    S = cp.Variable((blocks.T, blocks.A), nonneg=True)
    constraints = []
    for t in range(blocks.T):
        k, a = blocks.rows[t], blocks.slacks[t]
        constraints.append(blocks.P[t, :k] @ W @ blocks.Z[t] + blocks.C[t, :k, :a] @ S[t, :a] >= blocks.h[t, :k])
    problem = cp.Problem(cp.Minimize(lam / 2 * cp.sum_squares(W) + weight * cp.sum(S)), constraints)
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return problem.value, W.value


@pytest.mark.parametrize("lam", [1e-3, 1e-1])
def test_detour_qp_equals_cvxpy(lam):
    blocks = random_blocks()
    weight = 1.0 / blocks.T
    result = detour_qp(blocks, lam, weight)
    reference, W = cvxpy_detour_qp(blocks, lam, weight)
    assert abs(result.objective - reference) <= 1e-7 * reference
    assert np.allclose(result.solution[0], W, atol=1e-5 * np.abs(W).max())
    # The multipliers price the rows: beta >= 0 and C'beta <= weight on real slacks.
    beta = result.extra["multipliers"]
    assert beta.min() >= 0 and blocks.slack_pull(beta).max() <= weight * (1 + 1e-8)


def test_warm_start_reaches_the_same_optimum():
    blocks = random_blocks(seed=1)
    cold = detour_qp(blocks, 1e-2, 1 / blocks.T)
    W, s = cold.solution
    warm = detour_qp(blocks, 1e-2, 1 / blocks.T, start=(W * 0.9, s, cold.extra["multipliers"]))
    assert abs(warm.objective - cold.objective) <= 1e-8 * cold.objective


@pytest.mark.parametrize("case", ["grid", "two_way"])
def test_equals_whole_qp_and_arc_working_set(case):
    if case == "grid":
        trial, X, tails, heads, n_nodes = grid_routes(T=60)
        Z = trial.train.Z
    else:
        Z, X, tails, heads, n_nodes, _ = two_way_network()
    data = network_samples(tails, heads, n_nodes, X, Z)
    detours = solve_network_detours(data, 1e-2)
    arcs = solve_network_margin(data, 1e-2, method="clarabel")
    reference = RouteMOM(lam=1e-2, solver="cvxpy").fit(Z, X, tails=tails, heads=heads, n_nodes=n_nodes)
    assert detours.certificate["relative_gap"] <= 1e-8
    assert abs(detours.objective - reference.objective_) <= 1e-6 * reference.objective_
    assert abs(detours.objective - arcs.objective) <= 1e-7 * arcs.objective
    Theta = detours.solution[0]
    assert np.allclose(Theta, arcs.solution[0], atol=1e-4 * np.abs(arcs.solution[0]).max())


def test_pilot_and_cold_rounds_reach_the_same_optimum(monkeypatch):
    trial, X, tails, heads, n_nodes = grid_routes(T=48, seed=2)
    data = network_samples(tails, heads, n_nodes, X, trial.train.Z)
    plain = solve_network_detours(data, 1e-2, warm=False)
    assert plain.extra["pilot"] is None
    monkeypatch.setattr(network_detours, "PILOT_MIN_SAMPLES", 3)
    piloted = solve_network_detours(data, 1e-2, warm=True)
    assert piloted.extra["pilot"]["samples"] == 48 // network_detours.PILOT_FACTOR
    assert abs(piloted.objective - plain.objective) <= 1e-7 * plain.objective
    assert piloted.certificate["relative_gap"] <= 1e-8


def test_predecessor_cycle_is_walked_from_a_chain_into_it():
    # Arcs 0: 0->1, 1: 1->2, 2: 2->0, 3: 3->0; pred[node] is the arc leaving it (x[node] =
    # x[head] + length): 3 -> 0 -> 1 -> 2 -> 0.
    data = network_samples([0, 1, 2, 3, 1], [1, 2, 0, 0, 3], 4, [[0, 0, 0, 0, 1]], np.ones((1, 1)))
    pred = np.array([0, 1, 2, 3])
    cycle = _predecessor_cycle(pred, data, 3)
    assert sorted(cycle.tolist()) == [0, 1, 2]
    assert _predecessor_cycle(np.array([-1, -1, -1, -1]), data, -1) is None


def test_refuses_the_shared_model():
    Z, X, tails, heads, n_nodes, rng = two_way_network()
    data = network_samples(tails, heads, n_nodes, X, Z, rng.uniform(size=(len(tails), 2)))
    with pytest.raises(ValueError, match="per-arc model"):
        solve_network_detours(data, 1e-2)
