"""The sparse cycle basis (solvers.network_cycles) spans the incidence matrix's null space exactly."""

import numpy as np
import pytest

from mom_pipeline.networks.generate import grid_network
from mom_pipeline.solvers.network_cycles import cycle_space_dimension, short_cycle_basis
from mom_pipeline.solvers.network_problem import incidence_matrix


def check_basis(tails, heads, n_nodes):
    tails, heads = np.asarray(tails), np.asarray(heads)
    B = short_cycle_basis(tails, heads, n_nodes)
    A = incidence_matrix(tails, heads, n_nodes).toarray()
    null_dimension = len(tails) - np.linalg.matrix_rank(A)
    assert B.shape == (len(tails), null_dimension) == (len(tails), cycle_space_dimension(tails, heads, n_nodes))
    dense = B.toarray()
    assert np.isin(dense, (-1.0, 0.0, 1.0)).all()
    assert np.abs(A @ dense).max(initial=0.0) == 0.0
    if null_dimension:
        assert np.linalg.matrix_rank(dense) == null_dimension
    return dense


def test_grid_of_two_way_streets_gives_its_two_cycles_and_faces():
    network, _ = grid_network(4, 5)
    dense = check_basis(network.tails, network.heads, network.n_nodes)
    lengths = np.abs(dense).sum(axis=0)
    assert (lengths == 2).sum() == network.n_arcs // 2 and (lengths == 4).sum() == 3 * 4


def test_two_way_roads_give_two_cycles_and_odd_graphs_work():
    rng = np.random.default_rng(0)
    pairs = {tuple(sorted((i, (i + 1) % 9))) for i in range(9)} | {tuple(sorted(rng.choice(9, 2, replace=False))) for _ in range(8)}
    two_way = [p for pair in sorted(pairs) for p in (pair, pair[::-1])]
    dense = check_basis([a for a, _ in two_way], [b for _, b in two_way], 9)
    assert (np.abs(dense).sum(axis=0) == 2).sum() == len(pairs)
    # Parallel arcs, a self-loop, two components and an isolated node; a tree has no cycles.
    tails, heads = [0, 0, 1, 2, 2, 4, 5, 6, 6], [1, 1, 2, 0, 2, 5, 6, 4, 4]
    check_basis(tails, heads, 8)
    assert short_cycle_basis([0, 1, 1], [1, 2, 3], 4).shape == (3, 0)


@pytest.mark.parametrize("seed", range(3))
def test_random_directed_graphs(seed):
    rng = np.random.default_rng(seed)
    n_nodes = 15
    arcs = rng.integers(0, n_nodes, (40, 2))
    check_basis(arcs[:, 0], arcs[:, 1], n_nodes)
