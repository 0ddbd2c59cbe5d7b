"""Regularization paths at tiny lam, where the box dual's margins lose digits and Clarabel is the restricted QP's
fallback: a path through other constants must reach the same optimum, and the polish of the
margin rows must put them on the margin without raising the objective."""

import numpy as np
import pytest

import mom_pipeline.solvers.hinge_working_set as hinge_working_set
from mom_pipeline.solvers import margin_polish
from mom_pipeline.methods.kernels import KernelMOM
from mom_pipeline.methods.mom_problem import MOMHingeRows, operators_of_bases
from mom_pipeline.methods.tuning import validation_split
from mom_pipeline.problems import generate_knapsack


@pytest.mark.slow
@pytest.mark.parametrize("gamma", [3.0, 5.0])
def test_restricted_clarabel_solves_reach_the_optimum_at_tiny_lam(monkeypatch, gamma):
    """Figure 4's trial 0 (degree-1 data, the 375 tuning samples), RBF kernel MOM. On a
    half-decade lam path the rounds at lam = 1e-6 (scaled lam 7e-15, box-dual matrix up to
    1e14) go to Clarabel; with its default tolerances gamma 3 ended 1.3e-5 above the optimum
    that the decade path reaches (within 1e-8 of cvxpy). Gamma 5 ended 9.1e-7 above cvxpy at
    lam = 1e-5 through the box dual's round-off, before the margin rows were polished."""
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
    # Stalled box duals go to Clarabel here (their certified polish would take most of them).
    monkeypatch.setattr(hinge_working_set, "_polished_stall", lambda *args, **kwargs: None)
    half_decades = [KernelMOM(kernel="rbf", gamma=gamma, lam=float(v)) for v in np.logspace(-6, 2, 17)]
    KernelMOM.fit_many(half_decades, data.train.Z[train], solution.x[train], **fit)
    assert clarabel_calls  # the path this test is about was taken
    decades = [KernelMOM(kernel="rbf", gamma=gamma, lam=float(v)) for v in np.logspace(-6, 2, 9)]
    KernelMOM.fit_many(decades, data.train.Z[train], solution.x[train], **fit)
    for fine, coarse in zip(half_decades[::2], decades):
        assert fine.objective_ == pytest.approx(coarse.objective_, rel=1e-7)


@pytest.fixture(scope="module")
def knapsack_rows():
    """MOM's rows on RBF kernel features of a small knapsack (figure 4's hard RBF setting)."""
    trial = generate_knapsack(50, 0, degree=1, feature_low=-1.0, seed=21)
    solution = trial.lp.solve(trial.train.C)
    M = operators_of_bases(trial.lp.A, solution.basis)
    model = KernelMOM(kernel="rbf", gamma=0.5).fit(trial.train.Z, solution.x, lp=trial.lp, basis=solution.basis)
    return MOMHingeRows(M, model.transform(trial.train.Z) @ model.row_space_)


@pytest.mark.slow
def test_polish_puts_margin_rows_on_the_margin_and_never_raises_the_objective(knapsack_rows):
    """An optimum at tiny lam whose margin rows were moved off by 1e-6 (the size of the box
    dual's round-off there) is brought back: margins on 1 to 1e-9, objective back to the
    optimum's; polishing the optimum itself keeps it at the optimum."""
    rows = knapsack_rows
    lam, weight = 1e-13, 1.0 / rows.T
    assert lam < margin_polish.POLISH_BELOW_LAM
    w = hinge_working_set.solve_working_set(rows, lam, weight, None, 1e-8, None, 1e-2, 1e-2, 100).solution
    on_margin = np.flatnonzero(np.abs(rows.margins(w) - 1.0) <= 1e-9)
    assert on_margin.size > 0
    step = rows.weighted_sum_of(on_margin, np.random.default_rng(0).normal(size=on_margin.size))
    moved = w + step * (1e-6 / np.abs(rows.margins(step)[on_margin]).max())

    def objective(v):
        return margin_polish.hinge_objective(rows, lam, weight, v)

    assert objective(moved) > objective(w)
    polished = margin_polish.polish_margin_rows(rows, lam, weight, moved)
    assert np.abs(rows.margins(polished)[on_margin] - 1.0).max() <= 1e-9
    assert objective(polished) <= objective(moved)
    assert objective(polished) == pytest.approx(objective(w), rel=1e-9)
    # Polishing the optimum itself keeps it there. Its objective is not the measure here: at this
    # lam the hinge terms of margins 1 +- 1e-13 are round-off (two evaluations of the same w differ
    # by 1.5e-14 of its 9e-12), so the check is on the optimum's own terms: the same norm (the
    # hard-margin optimum's, within 2e-9 of cvxpy's) and no margin below 1.
    again = margin_polish.polish_margin_rows(rows, lam, weight, w)
    assert again @ again == pytest.approx(w @ w, rel=1e-9)
    assert rows.margins(again).min() >= 1.0 - 1e-9


def test_path_constants_insert_warm_starts_between_distant_constants():
    from mom_pipeline.solvers.hinge_path import path_constants

    lams = np.array([1e-2, 1.0, 1e-2, 0.5])
    path = path_constants(lams, 10 ** 0.5)
    assert [i for i, _ in path if i is not None] == [1, 3, 0, 2]  # every constant once, largest first
    values = [lam for _, lam in path]
    assert all(a >= b for a, b in zip(values, values[1:]))
    assert max(a / b for a, b in zip(values, values[1:])) <= 10 ** 0.5 * (1 + 1e-12)
    assert path_constants(lams, None) == [(1, 1.0), (3, 0.5), (0, 0.01), (2, 0.01)]
    with pytest.raises(ValueError, match="above 1"):  # a ratio of 1 or less would never step down
        path_constants(lams, 1.0)
