"""The block interior-point method of the dual formulation against cvxpy, on random blocks and
on MOM's dual formulation (both of its solvers)."""

import cvxpy as cp
import numpy as np
import pytest

from mom_pipeline.methods.mom import MOM
from mom_pipeline.problems import generate_shortest_path
from mom_pipeline.solvers.block_hinge_ipm import block_hinge_qp


def _objective(W, U, M, N, Z, lam, weight):
    coupled = np.einsum("tkn,tn->tk", M, Z @ W.T) + np.einsum("tkq,tq->tk", N, U)
    hinge = np.maximum(0.0, 1.0 - coupled).sum() + np.maximum(0.0, 1.0 - U).sum()
    return 0.5 * lam * np.sum(W**2) + weight * hinge


def _cvxpy_reference(M, N, Z, lam, weight):
    """Independent build: a Python loop over the blocks with cvxpy variables."""
    T, K, n = M.shape
    W = cp.Variable((n, Z.shape[1]))
    U = cp.Variable((T, N.shape[2]))
    hinge = [cp.sum(cp.pos(1 - M[t] @ W @ Z[t] - N[t] @ U[t])) + cp.sum(cp.pos(1 - U[t])) for t in range(T)]
    problem = cp.Problem(cp.Minimize(0.5 * lam * cp.sum_squares(W) + weight * sum(hinge)))
    problem.solve(solver=cp.CLARABEL)
    return problem.value


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("lam", [1e-4, 1e-1, 10.0])
def test_block_ipm_matches_cvxpy_on_random_blocks(seed, lam):
    rng = np.random.default_rng(seed)
    T, K, q, n, d = 25, 5, 3, 6, 3
    M, N, Z = rng.normal(size=(T, K, n)), rng.normal(size=(T, K, q)), rng.normal(size=(T, d))
    W, U, info = block_hinge_qp(M, N, Z, lam, 1.0 / T)
    reference = _cvxpy_reference(M, N, Z, lam, 1.0 / T)
    assert _objective(W, U, M, N, Z, lam, 1.0 / T) == pytest.approx(reference, rel=1e-6)
    assert info["iterations"] >= 1


@pytest.mark.parametrize("lam", [1e-6, 1e-2, 1e2])
def test_both_dual_solvers_agree_on_degenerate_shortest_paths(lam):
    trial = generate_shortest_path(80, 0, degree=4, eps_bar=0.5, seed=5)
    X = trial.lp.solve(trial.train.C).x
    fast = MOM(lam=lam, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)
    conic = MOM(lam=lam, formulation="dual", solver="cvxpy").fit(trial.train.Z, X, lp=trial.lp)
    assert fast.solver_info_["solver"] == "block_ipm" and conic.solver_info_["solver"] == "clarabel"
    assert fast.objective_ == pytest.approx(conic.objective_, rel=1e-6)


def test_problems_too_large_for_the_block_method_go_to_clarabel(monkeypatch):
    import mom_pipeline.methods.mom_dual as mom_dual

    trial = generate_shortest_path(80, 0, degree=4, eps_bar=0.5, seed=5)
    X = trial.lp.solve(trial.train.C).x
    block = MOM(lam=1e-2, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)
    monkeypatch.setattr(mom_dual, "block_ipm_fits", lambda *shape: False)
    whole = MOM(lam=1e-2, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)
    assert block.solver_info_["solver"] == "block_ipm" and whole.solver_info_["solver"] == "clarabel"
    assert whole.objective_ == pytest.approx(block.objective_, rel=1e-6)
