"""Bases from x* alone, and Lemma 1 through the reduced-cost operator."""

import numpy as np
import pytest

from mom_pipeline.lp import (
    BasisError,
    GridShortestPath,
    basis_from_solution,
    reduced_cost_operator,
    reduced_costs,
    solve_lp_batch,
)
from mom_pipeline.lp.highs import basis_matrices
from mom_pipeline.problems import generate_knapsack, generate_shortest_path


@pytest.mark.parametrize("generate", [generate_shortest_path, generate_knapsack])
def test_support_completion_is_a_basis_of_x_star(generate):
    trial = generate(300, 0, degree=2, seed=4)
    sol = trial.lp.solve(trial.train.C)
    basis = basis_from_solution(trial.lp.A, trial.lp.b, sol.x)
    A_B = basis_matrices(trial.lp.A, basis)
    assert (np.linalg.cond(A_B) < 1e10).all()
    # the support is inside the basis and the basic solution is x*
    x_B = np.linalg.solve(A_B, np.broadcast_to(trial.lp.b, (300, trial.lp.m))[..., None])[..., 0]
    x = np.zeros_like(sol.x)
    np.put_along_axis(x, basis, x_B, axis=1)
    np.testing.assert_allclose(x, sol.x, atol=1e-9)
    # deterministic
    np.testing.assert_array_equal(basis, basis_from_solution(trial.lp.A, trial.lp.b, sol.x))


def test_shortest_path_is_degenerate_and_still_works():
    trial = generate_shortest_path(50, 0, seed=0)
    sol = trial.lp.solve(trial.train.C)
    assert ((sol.x > 0).sum(axis=1) == 8).all() and trial.lp.m == 24
    basis = trial.lp.basis_from_solution(sol.x)
    assert basis.shape == (50, 24)


def test_lemma1_true_cost_is_optimal_on_its_basis_and_a_non_optimal_basis_is_not():
    rng = np.random.default_rng(5)
    sp = GridShortestPath()
    A, b = sp.constraints()
    C = rng.uniform(1.0, 3.0, size=(200, 40))
    sol = solve_lp_batch(A, b, C)
    M, _ = reduced_cost_operator(A, sol.basis)
    assert reduced_costs(M, C).min() >= -1e-9
    # A feasible but non-optimal basis: the shortest-path tree of other costs whose path is worse.
    other = sp.solve(rng.uniform(1.0, 3.0, size=(200, 40)))
    worse = np.einsum("tn,tn->t", C, other.x) > sol.objective + 1e-9
    assert worse.sum() > 150
    M2, _ = reduced_cost_operator(A, other.basis[worse])
    assert (reduced_costs(M2, C[worse]).min(axis=1) < 0).all()


def test_infeasible_x_star_is_named():
    A, b = GridShortestPath().constraints()
    X = GridShortestPath().solve(np.ones((4, 40))).x
    X[2, 0] += 0.5
    with pytest.raises(BasisError, match="sample 2.*not feasible"):
        basis_from_solution(A, b, X)
    X = GridShortestPath().solve(np.ones((4, 40))).x
    X[3, 5] = np.nan
    with pytest.raises(BasisError, match="sample 3.*NaN"):
        basis_from_solution(A, b, X)


def test_non_vertex_is_named():
    A, b = GridShortestPath(2, 2).constraints()
    paths = GridShortestPath(2, 2).solve(np.array([[1.0, 5.0, 1.0, 5.0], [5.0, 1.0, 5.0, 1.0]])).x
    X = np.vstack([paths[0], 0.5 * paths[0] + 0.5 * paths[1]])  # a mix of two paths: not a vertex
    with pytest.raises(BasisError, match="sample 1.*not a vertex"):
        basis_from_solution(A, b, X)


def test_reduced_cost_operator_matches_definition():
    rng = np.random.default_rng(6)
    A = rng.normal(size=(5, 4, 9))
    basis = np.sort(np.stack([rng.choice(9, 4, replace=False) for _ in range(5)]), axis=1)
    M, nonbasic = reduced_cost_operator(A, basis)
    c = rng.normal(size=(5, 9))
    for t in range(5):
        B, N = basis[t], nonbasic[t]
        expected = c[t, N] - c[t, B] @ np.linalg.solve(A[t][:, B], A[t][:, N])
        np.testing.assert_allclose(M[t] @ c[t], expected, atol=1e-10)


def test_reduced_cost_operator_is_shared_and_read_only():
    A, b = GridShortestPath().constraints()
    basis = GridShortestPath().solve(np.random.default_rng(0).uniform(1, 2, (30, 40))).basis
    M1, N1 = reduced_cost_operator(A, basis)
    M2, _ = reduced_cost_operator(A.copy(), basis.copy())  # same contents: the same arrays
    assert M1 is M2 and not M1.flags.writeable and not N1.flags.writeable
    other = basis.copy()
    other[0] = GridShortestPath().solve(np.random.default_rng(1).uniform(1, 2, (1, 40))).basis[0]
    assert reduced_cost_operator(A, other)[0] is not M1 or np.array_equal(other, basis)


def test_reduced_cost_operator_cache_holds_a_bounded_number_of_bytes(monkeypatch):
    """Operators above the cache's byte budget are built each time (equal, not shared), and the
    cache drops its oldest entries to stay within the budget."""
    import mom_pipeline.lp.bases as bases

    A, _ = GridShortestPath().constraints()
    rng = np.random.default_rng(2)
    small, large = (GridShortestPath().solve(rng.uniform(1, 2, (T, 40))).basis for T in (10, 40))
    monkeypatch.setattr(bases, "_OPERATOR_CACHE", type(bases._OPERATOR_CACHE)())
    one_small = 10 * 16 * 40 * 8 + 10 * 16 * 8
    monkeypatch.setattr(bases, "OPERATOR_CACHE_BYTES", 2 * one_small)
    M1, _ = reduced_cost_operator(A, large)
    M2, _ = reduced_cost_operator(A, large)
    assert M1 is not M2 and np.array_equal(M1, M2) and not M2.flags.writeable and not bases._OPERATOR_CACHE
    S1, _ = reduced_cost_operator(A, small)
    assert reduced_cost_operator(A, small)[0] is S1
    for shift in range(1, 4):  # three more small operators: only the newest two stay
        reduced_cost_operator(A, np.roll(small, shift, axis=0))
    assert len(bases._OPERATOR_CACHE) == 2 and bases._cached_bytes() <= bases.OPERATOR_CACHE_BYTES
    assert reduced_cost_operator(A, small)[0] is not S1
