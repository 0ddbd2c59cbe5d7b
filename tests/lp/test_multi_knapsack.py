"""The multi-dimensional fractional knapsack's batched simplex agrees with HiGHS, ties and
degenerate vertices included, and its bases are optimal; the two-resource closed-form
simplex agrees with the general one and with HiGHS (scipy's linprog), and leaves the samples
it does not certify to the general simplex."""

import numpy as np
import pytest
from scipy.optimize import linprog
from test_oracles import _check_optimal_basis

import mom_pipeline.lp.multi_knapsack as multi_knapsack
import mom_pipeline.lp.two_resource_simplex as two_resource_simplex
from mom_pipeline.lp import LPInputError, MultiKnapsack, StandardFormLP, solve_lp_batch
from mom_pipeline.problems import generate_multi_knapsack


@pytest.mark.parametrize("resources, items", [(2, 32), (1, 7), (3, 10)])
def test_simplex_matches_highs(resources, items, monkeypatch):
    rng = np.random.default_rng(resources)
    knapsack = MultiKnapsack(weights=rng.integers(300, 800, (resources, items)) / 100,
                             capacities=np.full(resources, 20.0))
    A, b = knapsack.constraints()
    assert A.shape == (resources + items, 2 * items + resources)
    n = A.shape[1]
    values = np.column_stack([-rng.integers(1, 12, (400, items)), np.zeros((400, items + resources))])
    continuous = rng.normal(size=(400, n))  # costs on every column, slacks included
    ties = rng.integers(-2, 2, size=(400, n)).astype(float)  # many tied optima, degenerate vertices
    fallbacks = []
    original = multi_knapsack.solve_lp_batch
    monkeypatch.setattr(multi_knapsack, "solve_lp_batch", lambda A, b, C: fallbacks.append(len(C)) or original(A, b, C))
    for C in (values, continuous, ties, np.zeros((3, n))):
        oracle = knapsack.solve(C)
        reference = solve_lp_batch(A, b, C)
        np.testing.assert_allclose(oracle.objective, reference.objective, atol=1e-9 * (1 + np.abs(C).sum()))
        np.testing.assert_allclose(oracle.objective, np.einsum("tn,tn->t", C, oracle.x), atol=1e-9)
        _check_optimal_basis(A, b, oracle, C)
        assert knapsack.solve(C, need_basis=False).basis is None
    assert sum(fallbacks) == 0  # the simplex solves every sample itself


def test_a_sample_that_does_not_converge_goes_to_highs(monkeypatch):
    trial = generate_multi_knapsack(20, 0, degree=2, seed=3)
    monkeypatch.setattr(multi_knapsack, "MAX_PIVOTS_PER_COLUMN", 0)  # no simplex step at all
    monkeypatch.setattr(two_resource_simplex, "MAX_PIVOTS", 0)
    fallbacks = []
    original = multi_knapsack.solve_lp_batch
    monkeypatch.setattr(multi_knapsack, "solve_lp_batch", lambda A, b, C: fallbacks.append(len(C)) or original(A, b, C))
    solution = trial.lp.solve(trial.train.C)
    reference = solve_lp_batch(trial.lp.A, trial.lp.b, trial.train.C)
    np.testing.assert_allclose(solution.objective, reference.objective, atol=1e-9)
    _check_optimal_basis(trial.lp.A, trial.lp.b, solution, trial.train.C)
    assert sum(fallbacks) > 0


def _two_resource_instances(rng, knapsack, T: int) -> dict:
    """Cost batches (T, 2m + 2): the benchmark's integer values, continuous costs on every
    column, and small integers (tied optima, degenerate vertices)."""
    m = knapsack.n_items
    return {"values": np.column_stack([-rng.integers(1, 30, (T, m)), np.zeros((T, m + 2))]),
            "continuous": rng.normal(size=(T, 2 * m + 2)),
            "ties": rng.integers(-2, 2, size=(T, 2 * m + 2)).astype(float)}


def _linprog_optimum(knapsack, c) -> tuple[np.ndarray, float]:
    """The optimal items and value of min q'x, W x <= cap, 0 <= x <= 1 by HiGHS through scipy."""
    m = knapsack.n_items
    q = knapsack.item_costs(c[None])[0]
    result = linprog(q, A_ub=knapsack.weights, b_ub=knapsack.capacities, bounds=(0, 1), method="highs")
    assert result.status == 0
    return result.x, result.fun + c[m + 2:].sum() + c[m:m + 2] @ knapsack.capacities


@pytest.mark.parametrize("seed", [0, 1])
def test_two_resource_simplex_matches_general_simplex_and_highs(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    knapsack = MultiKnapsack(weights=rng.integers(300, 800, (2, 32)) / 100, capacities=np.full(2, 20.0))
    A, b = knapsack.constraints()
    m = knapsack.n_items
    general_rows = []
    general = MultiKnapsack._general_simplex
    monkeypatch.setattr(MultiKnapsack, "_general_simplex",
                        lambda self, C: general_rows.append(len(C)) or general(self, C))
    for kind, C in _two_resource_instances(rng, knapsack, 300).items():
        general_rows.clear()
        certified = two_resource_simplex.solve_two_resource(knapsack.item_costs(C), knapsack.weights,
                                                            knapsack.capacities)[0]
        solution = knapsack.solve(C)
        assert general_rows == ([] if certified.all() else [int((~certified).sum())])
        reference = general(knapsack, C)
        np.testing.assert_allclose(solution.objective, reference.objective, atol=1e-9 * (1 + np.abs(C).sum()))
        np.testing.assert_allclose(solution.x, reference.x, atol=1e-9)
        np.testing.assert_array_equal(solution.basis[certified], reference.basis[certified])
        _check_optimal_basis(A, b, solution, C)
        for t in range(0, len(C), 10):
            items, value = _linprog_optimum(knapsack, C[t])
            assert solution.objective[t] == pytest.approx(value, abs=1e-8 * (1 + np.abs(C[t]).sum()))
            if certified[t]:  # a certified optimum is unique: HiGHS finds the same vertex
                np.testing.assert_allclose(solution.x[t, :m], items, atol=1e-8)
        if kind == "ties":
            assert 0 < certified.sum() < len(C)  # tied optima are left to the general simplex
        else:
            assert certified.mean() > 0.95


def test_two_resource_simplex_on_the_benchmark_generator():
    trial = generate_multi_knapsack(400, 0, degree=4, eps_bar=0.5, seed=11)
    knapsack, C = trial.lp.structure, trial.train.C
    rng = np.random.default_rng(11)
    for costs in (C, C + rng.normal(size=C.shape) * knapsack.item_costs(C).std()):  # as a perturbed method asks
        certified = two_resource_simplex.solve_two_resource(knapsack.item_costs(costs), knapsack.weights,
                                                            knapsack.capacities)[0]
        solution, reference = knapsack.solve(costs), knapsack._general_simplex(costs)
        np.testing.assert_allclose(solution.x, reference.x, atol=1e-9)
        np.testing.assert_array_equal(solution.basis[certified], reference.basis[certified])
        assert knapsack.solve(costs, need_basis=False).basis is None
        for t in range(0, len(costs), 20):
            assert solution.objective[t] == pytest.approx(_linprog_optimum(knapsack, costs[t])[1], abs=1e-8)
        assert certified.mean() > 0.95


def test_samples_left_uncertified_after_the_pivot_budget_take_the_general_simplex(monkeypatch):
    trial = generate_multi_knapsack(200, 0, degree=4, eps_bar=0.5, seed=5)
    knapsack, C = trial.lp.structure, trial.train.C
    monkeypatch.setattr(two_resource_simplex, "MAX_PIVOTS", 1)
    certified = two_resource_simplex.solve_two_resource(knapsack.item_costs(C), knapsack.weights,
                                                        knapsack.capacities)[0]
    assert 0 < certified.sum() < len(C)
    np.testing.assert_allclose(knapsack.solve(C).x, knapsack._general_simplex(C).x, atol=1e-9)


def test_bad_structures_are_refused():
    with pytest.raises(LPInputError, match="weights must be \\(k, m\\) and capacities \\(k,\\)"):
        MultiKnapsack(weights=np.ones((2, 3)), capacities=np.ones(3))
    with pytest.raises(LPInputError, match="capacities finite and positive"):
        MultiKnapsack(weights=np.ones((2, 3)), capacities=np.array([1.0, 0.0]))
    lp = StandardFormLP.from_structure(MultiKnapsack(weights=np.ones((2, 3)), capacities=np.ones(2)))
    bad = np.zeros((4, lp.n))
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="sample 2"):
        lp.solve(bad)
