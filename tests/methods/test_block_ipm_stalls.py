"""Stalls of the block interior-point method: detected early, retried cold with accurate Newton
solves, and only then sent to Clarabel; every answer checked against Clarabel on the whole problem."""

import numpy as np
import pytest

import mom_pipeline.methods.mom_dual as mom_dual
from mom_pipeline.methods.mom import MOM
from mom_pipeline.problems import generate_shortest_path
from mom_pipeline.solvers.block_hinge_ipm import block_hinge_qp

LAMBDAS = [1e-5, 1e-3, 1e-1]


def _trial(n_train: int, seed: int):
    trial = generate_shortest_path(n_train, 0, degree=4, seed=seed)
    return trial, trial.lp.solve(trial.train.C).x


def _clarabel_objectives(trial, X, lambdas):
    """The whole problem by Clarabel (at `mom_dual.CLARABEL_TOL`: at its default tolerances it
    stopped 1.5e-5 relative above the optimum at lam = 1e-6 on the T = 100 grid below)."""
    return [MOM(lam=lam, formulation="dual", solver="cvxpy").fit(trial.train.Z, X, lp=trial.lp).objective_
            for lam in lambdas]


@pytest.mark.parametrize("lam", [1e-4, 1e-1, 10.0])
def test_accurate_solves_reach_the_same_optimum(lam):
    rng = np.random.default_rng(3)
    T, K, q, n, d = 25, 5, 3, 6, 3
    M, N, Z = rng.normal(size=(T, K, n)), rng.normal(size=(T, K, q)), rng.normal(size=(T, d))
    plain = block_hinge_qp(M, N, Z, lam, 1.0 / T)
    accurate = block_hinge_qp(M, N, Z, lam, 1.0 / T, accurate=True)
    assert accurate.objective == pytest.approx(plain.objective, rel=1e-9)


@pytest.mark.slow
def test_a_stalled_solve_is_retried_cold_with_accurate_solves(monkeypatch):
    trial, X = _trial(60, 1)
    calls = []

    def stalls_unless_accurate(*args, accurate=False, **kwargs):
        calls.append((kwargs.get("start") is not None, accurate))
        if not accurate:
            raise RuntimeError("the block interior-point method stalled at iteration 9 (forced by the test)")
        return block_hinge_qp(*args, accurate=accurate, **kwargs)

    monkeypatch.setattr(mom_dual, "block_hinge_qp", stalls_unless_accurate)
    models = MOM.fit_many([MOM(lam=lam, formulation="dual") for lam in LAMBDAS], trial.train.Z, X, lp=trial.lp)
    # Each lam: the plain solve (warm after the first), then the cold accurate one.
    assert calls == [(False, False), (False, True), (True, False), (False, True), (True, False), (False, True)]
    monkeypatch.undo()
    for model, reference in zip(models, _clarabel_objectives(trial, X, LAMBDAS)):
        assert model.solver_info_["solver"] == "block_ipm"
        assert "forced by the test" in model.solver_info_["block_ipm_retry"]
        assert "block_ipm_failure" not in model.solver_info_
        assert model.objective_ == pytest.approx(reference, rel=1e-6)


def test_a_second_stall_goes_to_clarabel_and_says_both(monkeypatch):
    trial, X = _trial(60, 1)

    def always_stalls(*args, accurate=False, **kwargs):
        raise RuntimeError(f"stalled (forced by the test, accurate={accurate})")

    monkeypatch.setattr(mom_dual, "block_hinge_qp", always_stalls)
    model = MOM(lam=1e-2, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)
    monkeypatch.undo()
    assert model.solver_info_["solver"] == "clarabel"
    failure = model.solver_info_["block_ipm_failure"]
    assert "accurate=False" in failure and "cold with accurate solves" in failure and "accurate=True" in failure
    assert model.objective_ == pytest.approx(_clarabel_objectives(trial, X, [1e-2])[0], rel=1e-6)


@pytest.mark.slow
def test_small_shortest_path_grid_is_solved_without_clarabel():
    """T = 100, seed 2: with one refinement per Newton solve and no retry, the three smallest
    lambdas stalled at dual residuals near 1e-2 and went to Clarabel (3.5 s instead of 0.8 s)."""
    trial, X = _trial(100, 2)
    lambdas = np.logspace(-6, 2, 9)
    models = MOM.fit_many([MOM(lam=lam, formulation="dual") for lam in lambdas], trial.train.Z, X, lp=trial.lp)
    assert [model.solver_info_["solver"] for model in models] == ["block_ipm"] * 9
    for model, reference in zip(models[:3], _clarabel_objectives(trial, X, lambdas[:3])):
        assert model.objective_ == pytest.approx(reference, rel=1e-6)
