"""The multi-dimensional fractional knapsack's batched simplex agrees with HiGHS, ties and
degenerate vertices included, and its bases are optimal."""

import numpy as np
import pytest
from test_oracles import _check_optimal_basis

import mom_pipeline.lp.multi_knapsack as multi_knapsack
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
    solution = trial.lp.solve(trial.train.C)
    reference = solve_lp_batch(trial.lp.A, trial.lp.b, trial.train.C)
    np.testing.assert_allclose(solution.objective, reference.objective, atol=1e-9)
    _check_optimal_basis(trial.lp.A, trial.lp.b, solution, trial.train.C)


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
