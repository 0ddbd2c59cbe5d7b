"""Every solver path of the MOM QP is checked by the optimality certificate (a duality gap from
the KKT conditions), and the certificate itself against cvxpy: its lower bound never exceeds
the cvxpy optimum, and a perturbed solution shows a positive gap."""

import numpy as np
import pytest

from mom_pipeline.solvers import policy
import mom_pipeline.solvers.hinge_working_set as hinge_working_set
from mom_pipeline.lp import reduced_cost_operator
from mom_pipeline.methods.mom_problem import kkt_certificate, mom_objective
from mom_pipeline.methods.mom_solve import solve_hinge_qp, solve_hinge_qp_cvxpy
from mom_pipeline.problems import generate_knapsack, generate_shortest_path


def _operators(name: str, n_train: int, seed: int):
    if name == "shortest_path":
        trial = generate_shortest_path(n_train, 0, degree=4, eps_bar=0.5, seed=seed)
    else:
        trial = generate_knapsack(n_train, 0, degree=2, eps_bar=0.5, seed=seed)
    basis = trial.lp.solve(trial.train.C).basis
    return reduced_cost_operator(trial.lp.A, basis)[0], trial.train.Z


@pytest.mark.parametrize("name", ["shortest_path", "knapsack"])
@pytest.mark.parametrize("lam", [1e-5, 1e-2, 10.0])
def test_default_path_is_certified_optimal(name, lam):
    M, Z = _operators(name, 60, seed=1)
    Theta, _ = solve_hinge_qp(M, Z, lam)
    certificate = kkt_certificate(Theta, M, Z, lam)
    assert certificate["relative_gap"] <= 1e-7
    assert certificate["gap"] >= -1e-12  # weak duality: the bound is below the objective


@pytest.mark.parametrize("method", ["interior_point", "box_dual", "clarabel"])
@pytest.mark.parametrize("lam", [1e-4, 1e-1])
def test_every_restricted_qp_method_is_certified_optimal(monkeypatch, method, lam):
    """Whatever the policy would pick, each restricted-QP solver gives the certified optimum."""
    chosen = []
    monkeypatch.setattr(policy, "restricted_qp_method",
                        lambda n_vars, n_rows, ball: chosen.append(method) or method)
    M, Z = _operators("knapsack", 50, seed=2)
    w0 = np.random.default_rng(3).normal(size=M.shape[2] * Z.shape[1])  # skip the active-set finish
    Theta, info = solve_hinge_qp(M, Z, lam, w0=w0)
    assert chosen and info["restricted_solves"] >= 1
    assert kkt_certificate(Theta, M, Z, lam)["relative_gap"] <= 1e-7


@pytest.mark.parametrize("system", ["dense", "woodbury", "cg"])
def test_every_newton_system_leads_to_the_certified_optimum(monkeypatch, system):
    monkeypatch.setattr(policy, "newton_system", lambda n_vars, n_curved: system)
    M, Z = _operators("shortest_path", 40, seed=4)
    Theta, info = solve_hinge_qp(M, Z, 1e-3)
    assert info["newton_steps"] >= 1
    assert kkt_certificate(Theta, M, Z, 1e-3)["relative_gap"] <= 1e-7


def test_certificate_bounds_the_cvxpy_optimum_and_detects_a_suboptimal_point():
    M, Z = _operators("knapsack", 40, seed=5)
    lam = 1e-2
    reference, _ = solve_hinge_qp_cvxpy(M, Z, lam)
    optimum = mom_objective(reference, M, Z, lam)
    Theta, _ = solve_hinge_qp(M, Z, lam)
    certificate = kkt_certificate(Theta, M, Z, lam)
    assert certificate["lower_bound"] <= optimum + 1e-9
    assert certificate["objective"] == pytest.approx(optimum, rel=1e-6)
    perturbed = Theta + 0.05 * np.abs(Theta).max() * np.random.default_rng(6).normal(size=Theta.shape)
    assert kkt_certificate(perturbed, M, Z, lam)["relative_gap"] > 1e-4


def _kernel_operators(n_train: int, seed: int, degree: int = 3):
    """A knapsack problem on polynomial kernel features: 21 x 35 = 735 unknowns, kernel-sized."""
    from mom_pipeline.methods.kernels import KernelFeatures

    trial = generate_knapsack(n_train, 0, degree=4, feature_low=-1.0, seed=seed)
    basis = trial.lp.solve(trial.train.C).basis
    Z = trial.train.Z
    Phi = KernelFeatures(kernel="poly", degree=degree, gamma=1.0).fit(Z).transform(Z)
    _, singular, Vt = np.linalg.svd(Phi, full_matrices=False)
    return reduced_cost_operator(trial.lp.A, basis)[0], Phi @ Vt[singular > 1e-10 * singular[0]].T


@pytest.mark.parametrize("lam", [pytest.param(1e-6, marks=pytest.mark.slow), 1e-4, 1e-2])
def test_adaptive_working_set_is_certified_optimal(lam):
    """Kernel-sized working sets drop their far rows: the result is still the certified optimum,
    equal to cvxpy's."""
    from mom_pipeline.solvers.policy import adaptive_working_set

    M, F = _kernel_operators(80, seed=7)
    assert adaptive_working_set(M.shape[2] * F.shape[1])
    w0 = np.random.default_rng(8).normal(size=M.shape[2] * F.shape[1])  # a poor start: many rounds
    Theta, info = solve_hinge_qp(M, F, lam, w0=w0)
    assert info["iterations"] >= 2 and info["dropped_rows"] > 0
    certificate = kkt_certificate(Theta, M, F, lam)
    assert certificate["relative_gap"] <= 1e-7 and certificate["gap"] >= -1e-12
    reference, _ = solve_hinge_qp_cvxpy(M, F, lam)
    optimum = mom_objective(reference, M, F, lam)
    assert certificate["objective"] == pytest.approx(optimum, rel=1e-6)
    assert certificate["objective"] <= optimum * (1 + 1e-9)  # never above the reference beyond its accuracy

