"""MOM solved on the costs its reduced costs see (`mom_solve.cost_subspace`): reduced costs do not
change when c moves by A'y, so every reduced-cost row lies in A's null space, and the optimum's
Theta has no part outside it. The fast solvers work there; the cvxpy reference does not."""

import numpy as np
import pytest

import mom_pipeline.methods.mom_solve as mom_solve
from mom_pipeline.methods.kernels import KernelMOM
from mom_pipeline.methods.mom import MOM
from mom_pipeline.methods.mom_problem import mom_objective, operators_of_bases
from mom_pipeline.problems import generate_knapsack, generate_shortest_path


@pytest.mark.parametrize("problem", ["shortest_path", "knapsack"])
def test_reduced_cost_rows_lie_in_the_null_space_of_the_constraints(problem):
    trial = (generate_shortest_path(50, 0, degree=2, seed=3) if problem == "shortest_path"
             else generate_knapsack(50, 0, degree=2, feature_low=-1.0, seed=3))
    A = np.asarray(trial.lp.A, dtype=float)
    M = operators_of_bases(A, trial.lp.solve(trial.train.C).basis)
    U = mom_solve.cost_subspace(M, A)
    assert U.shape == (A.shape[1], A.shape[1] - np.linalg.matrix_rank(A))  # 16 of 40 arcs; 10 of 21 costs
    np.testing.assert_allclose(U.T @ U, np.eye(U.shape[1]), atol=1e-12)
    rows = M.reshape(-1, A.shape[1])
    np.testing.assert_allclose(rows - (rows @ U) @ U.T, 0.0, atol=1e-12)
    # from the rows alone (one constraint matrix per sample, or none given): their own span
    V = mom_solve.cost_subspace(M)
    assert V.shape[1] <= U.shape[1]
    np.testing.assert_allclose(rows - (rows @ V) @ V.T, 0.0, atol=1e-12)


@pytest.mark.parametrize("formulation", ["basis", "dual"])
def test_fits_on_the_cost_subspace_equal_the_whole_problem(formulation, monkeypatch):
    trial = generate_shortest_path(120, 0, degree=4, eps_bar=0.5, seed=5)
    X = trial.lp.solve(trial.train.C).x
    A = np.asarray(trial.lp.A, dtype=float)
    for lam in (1e-4, 1e-1):
        fast = MOM(lam=lam, formulation=formulation).fit(trial.train.Z, X, lp=trial.lp)
        reference = MOM(lam=lam, formulation=formulation, solver="cvxpy").fit(trial.train.Z, X, lp=trial.lp)
        assert fast.objective_ == pytest.approx(reference.objective_, rel=1e-6)
        assert fast.objective_ <= reference.objective_ * (1 + 1e-8)
        np.testing.assert_allclose(A @ fast.coef_, 0.0, atol=1e-10 * np.abs(fast.coef_).max())
    # the same fit without the reduction ends at the same optimum
    monkeypatch.setattr(mom_solve, "cost_subspace_pays", lambda n_vars: False)
    if formulation == "basis":
        whole = MOM(lam=1e-1).fit(trial.train.Z, X, lp=trial.lp)
        assert whole.objective_ == pytest.approx(fast.objective_, rel=1e-9)


def test_kernel_mom_grid_on_the_cost_subspace_equals_the_whole_problem(monkeypatch):
    trial = generate_knapsack(80, 0, degree=4, feature_low=-1.0, seed=7)
    solution = trial.lp.solve(trial.train.C)
    lams = [1e-5, 1e-3, 1e-1, 10.0]

    def grid():
        models = [KernelMOM(kernel="poly", degree=degree, gamma=1.0, lam=lam) for degree in (2, 3) for lam in lams]
        return KernelMOM.fit_many(models, trial.train.Z, solution.x, lp=trial.lp, basis=solution.basis)

    reduced = grid()
    monkeypatch.setattr(mom_solve, "cost_subspace_pays", lambda n_vars: False)
    whole = grid()
    M = operators_of_bases(trial.lp.A, solution.basis)
    for ours, reference in zip(reduced, whole):
        assert ours.objective_ == pytest.approx(reference.objective_, rel=1e-7)
        features = ours.transform(trial.train.Z)
        assert mom_objective(ours.coef_, M, features, ours.lam) == pytest.approx(ours.objective_, rel=1e-10)
