"""Clarabel as the restricted QP's fallback, where the box dual cannot certify its answer (tiny
lam): its result must be as exact as the other paths'."""

import numpy as np
import pytest

import mom_pipeline.solvers.hinge_working_set as hinge_working_set
from mom_pipeline.methods.kernels import KernelMOM
from mom_pipeline.methods.tuning import validation_split
from mom_pipeline.problems import generate_knapsack


def test_restricted_clarabel_solves_reach_the_optimum_at_tiny_lam(monkeypatch):
    """Figure 4's trial 0 (degree-1 data, the 375 tuning samples), RBF kernel MOM with gamma 3.
    On a half-decade lam path the rounds at lam = 1e-6 (scaled lam 7e-15, box-dual matrix up to
    1e14) go to Clarabel; with its default tolerances the result was 1.3e-5 above the optimum
    that the decade path reaches (within 1e-8 of cvxpy)."""
    seed = np.random.SeedSequence(entropy=104, spawn_key=(0, 0, 0))
    data = generate_knapsack(500, 0, degree=1, eps_bar=0.0, feature_low=-1.0, seed=seed)
    solution = data.lp.solve(data.train.C)
    train, _ = validation_split(500, 0.25, 0)
    fit = dict(lp=data.lp.subset(train), basis=solution.basis[train])
    clarabel_calls = []
    original = hinge_working_set.solve_clarabel

    def counted(*args, **kwargs):
        clarabel_calls.append(kwargs.get("tol"))
        return original(*args, **kwargs)

    monkeypatch.setattr(hinge_working_set, "solve_clarabel", counted)
    half_decades = [KernelMOM(kernel="rbf", gamma=3.0, lam=float(v)) for v in np.logspace(-6, 2, 17)]
    KernelMOM.fit_many(half_decades, data.train.Z[train], solution.x[train], **fit)
    assert clarabel_calls  # the path this test is about was taken
    decades = [KernelMOM(kernel="rbf", gamma=3.0, lam=float(v)) for v in np.logspace(-6, 2, 9)]
    KernelMOM.fit_many(decades, data.train.Z[train], solution.x[train], **fit)
    for fine, coarse in zip(half_decades[::2], decades):
        assert fine.objective_ == pytest.approx(coarse.objective_, rel=1e-7)
