"""The block interior-point method's two block factorizations (`block_factors.factor_qr` and
`factor_normal`): the same matrices, the checked fallback to the QR, the same optimum, and the
policy's choice between them (against Clarabel: tests/methods/test_block_ipm.py)."""

import numpy as np
import pytest

import mom_pipeline.solvers.block_factors as block_factors
from mom_pipeline.methods.mom import MOM
from mom_pipeline.methods.mom_dual_problem import dual_formulation_certificate
from mom_pipeline.problems import generate_knapsack, generate_shortest_path
from mom_pipeline.solvers import policy
from mom_pipeline.solvers.block_factors import NORMAL_MAX_LOSS, factor_normal, factor_qr
from mom_pipeline.solvers.block_hinge_ipm import block_hinge_qp


def _blocks(seed: int, T: int = 40, K: int = 6, q: int = 4, n: int = 5):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(T, K, n)), rng.normal(size=(T, K, q)), rng


def _sign_free(G, R_inverse, QtB):
    """What the solves use, free of the QR's row signs: F'F, P^-1 = R^-1 R^-T and R^-1 Q'D^1/2 [M; 0]."""
    return G, R_inverse @ np.swapaxes(R_inverse, 1, 2), R_inverse @ QtB


def test_normal_factors_equal_the_qr_factors_on_moderate_weights(monkeypatch):
    M, N, rng = _blocks(0)
    e = np.exp(rng.normal(scale=2.0, size=(M.shape[0], M.shape[1] + N.shape[2])))
    calls = []
    monkeypatch.setattr(block_factors, "factor_qr", lambda *args: calls.append(args) or factor_qr(*args))
    normal = factor_normal(M, N, e)
    assert not calls  # no block needed the QR
    for ours, reference in zip(_sign_free(*normal), _sign_free(*factor_qr(M, N, e))):
        scale = np.abs(reference).max(axis=(1, 2), keepdims=True)
        assert np.abs(ours - reference).max() <= 1e-12 * scale.max()
        assert (np.abs(ours - reference) <= 1e-12 * scale).all()


def test_blocks_that_lose_accuracy_are_factored_by_the_qr(monkeypatch):
    """Weights spanning 30 decades on half the blocks (as near an optimum): those whose normal
    matrices lost more than NORMAL_MAX_LOSS are factored by the QR, with its exact result; the
    blocks kept agree with the QR."""
    M, N, rng = _blocks(1, T=60)
    T, K, q = M.shape[0], M.shape[1], N.shape[2]
    e = np.exp(rng.normal(size=(T, K + q)))
    wide = np.arange(T) % 2 == 0
    e[wide] = 10.0 ** rng.uniform(-15, 15, size=(wide.sum(), K + q))
    redone = []
    monkeypatch.setattr(block_factors, "factor_qr", lambda M_, N_, e_: redone.append(e_) or factor_qr(M_, N_, e_))
    normal = factor_normal(M, N, e)
    assert len(redone) == 1
    flagged = np.array([np.flatnonzero((e == row).all(axis=1))[0] for row in redone[0]])
    assert 0 < flagged.size < wide.sum() + 1 and wide[flagged].all()  # only wide blocks, not all of them
    qr = factor_qr(M, N, e)
    for ours, reference in zip(normal, qr):
        assert np.array_equal(ours[flagged], reference[flagged])
    kept = np.setdiff1d(np.arange(T), flagged)
    for ours, reference in zip(_sign_free(*normal), _sign_free(*qr)):
        scale = np.abs(reference[kept]).max(axis=(1, 2), keepdims=True)
        assert (np.abs(ours[kept] - reference[kept]) <= 1e-16 * NORMAL_MAX_LOSS * 100 * scale).all()


def test_a_block_whose_normal_matrix_is_singular_is_factored_by_the_qr():
    """Two equal columns of N_t and weights of 1e-300 on its local rows: its normal matrix is
    singular in floating point; the block is found and factored by the QR, exactly as it would be
    alone, and every factor is finite."""
    M, N, rng = _blocks(2, T=8)
    K = M.shape[1]
    N[3, :, 1] = N[3, :, 0]
    e = np.exp(rng.normal(size=(8, K + N.shape[2])))
    e[3, K:] = 1e300
    G, R_inverse, QtB = factor_normal(M, N, e)
    assert np.isfinite(G).all() and np.isfinite(R_inverse).all() and np.isfinite(QtB).all()
    for ours, theirs in zip((G, R_inverse, QtB), factor_qr(M[3:4], N[3:4], e[3:4])):
        assert np.array_equal(ours[3], theirs[0])


def test_the_batched_cholesky_marks_the_matrices_that_fail():
    rng = np.random.default_rng(5)
    rows = rng.normal(size=(6, 7, 4))
    P = np.swapaxes(rows, 1, 2) @ rows
    P[2] = -np.eye(4)  # not positive definite: numpy's batched factorization raises for all six
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(P)
    L, good = block_factors.batched_cholesky(P)
    assert good.tolist() == [True, True, False, True, True, True]
    assert np.allclose(L[good], np.linalg.cholesky(P[good]), rtol=1e-14, atol=0)
    assert np.array_equal(L[2], np.eye(4))


@pytest.mark.parametrize("name", ["shortest_path", "knapsack"])
@pytest.mark.parametrize("lam", [1e-6, 1e-2, 1e2])
def test_dual_formulation_fits_are_the_same_with_either_factorization(monkeypatch, name, lam):
    """MOM(formulation="dual") with every block by the QR and every block by the normal
    matrices: the same optimum, the same Newton steps, each fit certified by its flows. The
    objectives are compared through the certificates: each lies between the optimum and its own
    gap above it, so each is at least the other's lower bound. (At lam = 1e-6 on the knapsack the
    normal path can end at its breakdown tolerance, a gap of 3e-8 relative, depending on the BLAS:
    a fixed 1e-9 between the objectives asked more than either solve promises.)"""
    if name == "shortest_path":
        trial = generate_shortest_path(120, 0, degree=4, eps_bar=0.5, seed=3)
    else:
        trial = generate_knapsack(60, 0, degree=2, eps_bar=0.5, eta_bar=1.0, seed=3)
    X = trial.lp.solve(trial.train.C).x
    fits, bounds = {}, {}
    for factorization, threshold in (("qr", 0), ("normal", 10**9)):
        monkeypatch.setattr(policy, "NORMAL_FACTOR_MAX_ROWS", threshold)
        fits[factorization] = model = MOM(lam=lam, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)
        assert model.solver_info_["solver"] == "block_ipm"
        certificate = dual_formulation_certificate(model.coef_, model.dual_, model.flows_, trial.lp.A, X,
                                                   trial.train.Z, lam)
        assert -1e-8 <= certificate["relative_gap"] <= 1e-6
        assert model.solver_info_["status"] in ("optimal", "optimal_at_breakdown")
        bounds[factorization] = certificate["lower_bound"]
    round_off = 1e-12 * abs(fits["qr"].objective_)
    assert fits["normal"].objective_ >= bounds["qr"] - round_off
    assert fits["qr"].objective_ >= bounds["normal"] - round_off
    assert fits["normal"].objective_ == pytest.approx(fits["qr"].objective_, rel=1e-7)  # the breakdown gap
    assert abs(fits["normal"].n_iter_ - fits["qr"].n_iter_) <= 2
    again = MOM(lam=lam, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)
    assert np.array_equal(again.coef_, fits["normal"].coef_)  # deterministic


def test_the_policy_picks_the_normal_factors_for_small_blocks_only(monkeypatch):
    assert policy.block_factorization(16, 16, 16) == "normal"  # the paper's 5 x 5 grid
    assert policy.block_factorization(81, 81, 81) == "normal"  # the 10 x 10 grid (measured faster)
    assert policy.block_factorization(361, 361, 361) == "qr"  # the 20 x 20 grid (not measured)
    limit = policy.NORMAL_FACTOR_MAX_ROWS
    assert policy.block_factorization(limit - 10, 10, 5) == "normal"
    assert policy.block_factorization(limit - 9, 10, 5) == "qr"
    used = []
    monkeypatch.setattr(block_factors, "factor_normal", lambda *args: used.append("normal") or factor_normal(*args))
    monkeypatch.setattr(block_factors, "factor_qr", lambda *args: used.append("qr") or factor_qr(*args))
    M, N, rng = _blocks(4, T=20, K=4, q=3, n=5)
    Z = rng.normal(size=(20, 2))
    block_hinge_qp(M, N, Z, 1e-2, 1.0 / 20)
    assert used and used[0] == "normal"  # every step by the normal matrices (blocks they lose: the QR)
    used.clear()
    block_hinge_qp(M, N, Z, 1e-2, 1.0 / 20, accurate=True)  # the retries after a stall: the QR
    assert used and "normal" not in used
    used.clear()
    monkeypatch.setattr(policy, "NORMAL_FACTOR_MAX_ROWS", 6)
    block_hinge_qp(M, N, Z, 1e-2, 1.0 / 20)
    assert used and "normal" not in used
    with pytest.raises(ValueError, match="factorization"):
        block_hinge_qp(M, N, Z, 1e-2, 1.0 / 20, factorization="cholesky")
