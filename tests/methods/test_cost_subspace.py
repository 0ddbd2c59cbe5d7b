"""MOM solved on the costs its reduced costs see (`mom_problem.constraint_null_space`,
`mom_solve.cost_subspace`): reduced costs do not change when c moves by A'y, so every
reduced-cost row lies in A's null space, and the optimum's Theta has no part outside it. Both
formulations' fast solvers work there; the cvxpy reference does not."""

import numpy as np
import pytest

import mom_pipeline.methods.mom_solve as mom_solve
from mom_pipeline.methods.kernels import KernelMOM
from mom_pipeline.methods.mom import MOM
from mom_pipeline.methods.mom_problem import constraint_null_space, mom_objective, operators_of_bases
from mom_pipeline.methods.tuning import validation_split
from mom_pipeline.problems import generate_knapsack, generate_shortest_path


@pytest.mark.parametrize("problem", ["shortest_path", "knapsack"])
def test_reduced_cost_rows_lie_in_the_null_space_of_the_constraints(problem):
    trial = (generate_shortest_path(50, 0, degree=2, seed=3) if problem == "shortest_path"
             else generate_knapsack(50, 0, degree=2, feature_low=-1.0, seed=3))
    A = np.asarray(trial.lp.A, dtype=float)
    M = operators_of_bases(A, trial.lp.solve(trial.train.C).basis)
    U = constraint_null_space(A)
    assert U.shape == (A.shape[1], A.shape[1] - np.linalg.matrix_rank(A))  # 16 of 40 arcs; 10 of 21 costs
    np.testing.assert_allclose(U.T @ U, np.eye(U.shape[1]), atol=1e-12)
    rows = M.reshape(-1, A.shape[1])
    np.testing.assert_allclose(rows - (rows @ U) @ U.T, 0.0, atol=1e-12 * np.abs(rows).max())
    assert constraint_null_space(np.zeros((2, 5))) is None  # nothing to reduce
    np.testing.assert_allclose(mom_solve.cost_subspace(M, A), U)
    # from the rows alone (one constraint matrix per sample, or none given): their own span
    V = mom_solve.cost_subspace(M)
    assert V.shape[1] <= U.shape[1]
    np.testing.assert_allclose(rows - (rows @ V) @ V.T, 0.0, atol=1e-12 * np.abs(rows).max())


@pytest.mark.slow
def test_dual_formulation_on_the_null_space_equals_the_whole_problem():
    trial = generate_shortest_path(120, 0, degree=4, eps_bar=0.5, seed=5)
    X = trial.lp.solve(trial.train.C).x
    A = np.asarray(trial.lp.A, dtype=float)
    for lam in (1e-6, 1e-4, 1e-1):
        fast = MOM(lam=lam, formulation="dual").fit(trial.train.Z, X, lp=trial.lp)
        reference = MOM(lam=lam, formulation="dual", solver="cvxpy").fit(trial.train.Z, X, lp=trial.lp)
        assert fast.solver_info_["solver"] == "block_ipm"
        assert fast.objective_ == pytest.approx(reference.objective_, rel=1e-6)
        assert fast.objective_ <= reference.objective_ * (1 + 1e-8)
        np.testing.assert_allclose(A @ fast.coef_, 0.0, atol=1e-10 * np.abs(fast.coef_).max())


def test_basis_formulation_on_the_cost_subspace_equals_the_whole_problem(monkeypatch):
    trial = generate_shortest_path(120, 0, degree=4, eps_bar=0.5, seed=5)
    X = trial.lp.solve(trial.train.C).x
    A = np.asarray(trial.lp.A, dtype=float)
    for lam in (1e-6, 1e-4, 1e-1):
        fast = MOM(lam=lam).fit(trial.train.Z, X, lp=trial.lp)
        reference = MOM(lam=lam, solver="cvxpy").fit(trial.train.Z, X, lp=trial.lp)
        assert fast.objective_ == pytest.approx(reference.objective_, rel=1e-6)
        assert fast.objective_ <= reference.objective_ * (1 + 1e-8)
        np.testing.assert_allclose(A @ fast.coef_, 0.0, atol=1e-10 * np.abs(fast.coef_).max())
    # the same fit without the reduction ends at the same optimum
    monkeypatch.setattr(mom_solve, "cost_subspace_pays", lambda n_vars: False)
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


@pytest.mark.slow
def test_rotated_rows_at_tiny_lam_reach_the_optimum():
    """Figure 4's trial 0 (degree-1 data, 375 tuning samples), polynomial kernel MOM of degree 1
    on the cost subspace (50 unknowns, rows rotated into dense ones) over the nine lam values.
    The first version of the reduction ended gamma 1 at lam 1e-6 3.3e-3 above the optimum: the
    primal interior-point method's Gram matrix turned indefinite at scaled lam 1.2e-14 and
    Clarabel, its fallback, reported "Solved" at a wrong point. Every lam now equals cvxpy's on the
    whole problem (21 costs)."""
    seed = np.random.SeedSequence(entropy=104, spawn_key=(0, 0, 0))
    data = generate_knapsack(500, 0, degree=1, eps_bar=0.0, feature_low=-1.0, seed=seed)
    solution = data.lp.solve(data.train.C)
    train, _ = validation_split(500, 0.25, 0)
    Z, X, fit = data.train.Z[train], solution.x[train], dict(lp=data.lp.subset(train), basis=solution.basis[train])
    lams = [float(v) for v in np.logspace(-6, 2, 9)]
    for gamma in (1.0, 5.0):
        models = KernelMOM.fit_many([KernelMOM(kernel="poly", degree=1, gamma=gamma, lam=lam) for lam in lams],
                                    Z, X, **fit)
        assert models[0].mom_.coef_.shape[0] == 21 and models[0].solver_info_["feature_rank"] == 5
        for model in models[:3]:  # lam 1e-6, 1e-5, 1e-4: the tiny scaled lam
            reference = KernelMOM(kernel="poly", degree=1, gamma=gamma, lam=model.lam, solver="cvxpy").fit(Z, X, **fit)
            assert model.objective_ <= reference.objective_ * (1 + 1e-8)
            assert model.objective_ == pytest.approx(reference.objective_, rel=1e-7)
