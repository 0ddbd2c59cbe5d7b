"""The exact oracles agree with HiGHS on thousands of random instances, ties included."""

import numpy as np
import pytest

from mom_pipeline.lp import (
    FractionalKnapsack,
    GridShortestPath,
    LPInputError,
    reduced_cost_operator,
    reduced_costs,
    solve_lp_batch,
)


def _check_optimal_basis(A, b, solution, C):
    """x is feasible, the basis reproduces x and is dual feasible for C (Lemma 1)."""
    assert np.allclose(np.einsum("mn,tn->tm", A, solution.x), b, atol=1e-9)
    assert solution.x.min() >= -1e-9
    M, nonbasic = reduced_cost_operator(A, solution.basis)
    scale = np.maximum(1.0, np.abs(C).max(axis=1, keepdims=True))
    assert (reduced_costs(M, C) >= -1e-9 * scale).all()
    # x vanishes off the basis
    off = np.take_along_axis(solution.x, nonbasic, axis=1)
    assert np.all(np.abs(off) <= 1e-12)


@pytest.mark.parametrize("grid", [(5, 5), (3, 4), (1, 4)])
def test_shortest_path_dp_matches_highs(grid):
    rng = np.random.default_rng(0)
    sp = GridShortestPath(*grid)
    A, b = sp.constraints()
    assert A.shape == (grid[0] * grid[1] - 1, sp.n_edges)
    assert np.linalg.matrix_rank(A) == A.shape[0]
    continuous = rng.uniform(0.1, 5.0, size=(1500, sp.n_edges))
    ties = rng.integers(0, 3, size=(1500, sp.n_edges)).astype(float)  # many tied optima
    negative = rng.normal(size=(200, sp.n_edges))  # a DAG: negative costs are fine
    for C in (continuous, ties, negative):
        oracle = sp.solve(C)
        reference = solve_lp_batch(A, b, C)
        np.testing.assert_allclose(oracle.objective, reference.objective, rtol=0, atol=1e-9)
        _check_optimal_basis(A, b, oracle, C)
        _check_optimal_basis(A, b, reference, C)
        # a path: 0/1 flow with h + w - 2 edges
        assert set(np.unique(oracle.x)) <= {0.0, 1.0}
        assert (oracle.x.sum(axis=1) == grid[0] + grid[1] - 2).all()


def test_default_grid_sizes():
    A, b = GridShortestPath().constraints()
    assert A.shape == (24, 40) and b[0] == -1 and np.count_nonzero(b) == 1


@pytest.mark.parametrize("budget_kind", ["random", "tight", "huge"])
def test_knapsack_greedy_matches_highs(budget_kind):
    rng = np.random.default_rng(1)
    for trial in range(10):
        prices = rng.integers(1, 1001, size=10).astype(float)
        budget = {"random": rng.uniform(prices.max(), prices.sum()), "tight": prices[:3].sum(),
                  "huge": 10 * prices.sum()}[budget_kind]
        ks = FractionalKnapsack(prices=tuple(prices), budget=budget)
        A, b = ks.constraints()
        C = np.zeros((300, 21))
        C[:, :10] = -rng.uniform(-0.3, 1.0, size=(300, 10))
        C[:100, :10] = -rng.integers(0, 3, size=(100, 10))  # ties in utility and zero utilities
        C[100:150, 10:] = rng.normal(size=(50, 11))  # costs on the slacks too
        oracle = ks.solve(C)
        reference = solve_lp_batch(A, b, C)
        np.testing.assert_allclose(oracle.objective, reference.objective, rtol=1e-9, atol=1e-9)
        _check_optimal_basis(A, b, oracle, C)


def test_knapsack_rejects_bad_prices():
    with pytest.raises(LPInputError, match="positive"):
        FractionalKnapsack(prices=(1.0, 0.0), budget=1.0)
    with pytest.raises(LPInputError, match="budget"):
        FractionalKnapsack(prices=(1.0, 2.0), budget=-1.0)


def test_oracle_rejects_wrong_cost_shape():
    with pytest.raises(LPInputError, match="C must be"):
        GridShortestPath().solve(np.ones((3, 39)))


@pytest.mark.parametrize("grid", [(5, 5), (2, 6)])
def test_decisions_only_path_enumeration_matches_the_dp(grid):
    """need_basis=False evaluates every path at once; same optimal values as the DP and HiGHS."""
    rng = np.random.default_rng(9)
    sp = GridShortestPath(*grid)
    C = np.vstack([rng.uniform(0.1, 5.0, size=(500, sp.n_edges)), rng.integers(0, 3, size=(500, sp.n_edges))])
    fast = sp.solve(C, need_basis=False)
    assert fast.basis is None
    np.testing.assert_allclose(fast.objective, sp.solve(C).objective, atol=1e-9)
    np.testing.assert_allclose(np.einsum("tn,tn->t", C, fast.x), fast.objective, atol=1e-9)
    A, b = sp.constraints()
    np.testing.assert_allclose(np.einsum("mn,tn->tm", A, fast.x), np.broadcast_to(b, (1000, len(b))))


def test_knapsack_decisions_only_equal_the_full_solve():
    """need_basis=False skips only the basis: the same decisions and values, ties included."""
    rng = np.random.default_rng(4)
    knapsack = FractionalKnapsack(prices=tuple(rng.uniform(0.5, 2.0, size=12)), budget=5.0)
    n = 2 * knapsack.n_items + 1
    C = np.vstack([rng.normal(size=(400, n)), rng.integers(-2, 2, size=(400, n))])
    fast, full = knapsack.solve(C, need_basis=False), knapsack.solve(C)
    assert fast.basis is None and full.basis is not None
    np.testing.assert_array_equal(fast.x, full.x)
    np.testing.assert_array_equal(fast.objective, full.objective)
    np.testing.assert_allclose(fast.objective, solve_lp_batch(*knapsack.constraints(), C).objective, atol=1e-9)
