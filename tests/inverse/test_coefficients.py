"""Theta by the user's variables (issue 53 item 13): the slacks' costs folded away, signs of
flipped variables undone, and the decisions of the folded costs checked against HiGHS on the
LP as the user wrote it."""

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog

from mom_pipeline.inverse import constraints_to_tables, make_example_dataset, prescribe
from mom_pipeline.inverse.coefficients import user_coefficients
from mom_pipeline.methods.cost_free_tuning import fit_standardized
from mom_pipeline.methods.mom import MOM
from mom_pipeline.pipelines.inverse.nodes import coefficients_table, validate_inputs
from mom_pipeline.pipelines.inverse.params import InverseParams

TABLES = ("features", "decisions", "constraints", "rhs", "bounds")


def _lp_problem(n_observations=12, seed=0, free=True):
    """An LP with <= rows, one = row, a shifted, a flipped, a free (or else shifted) and a boxed
    variable; the decisions are HiGHS's vertices for costs linear in two features."""
    rng = np.random.default_rng(seed)
    A_ub = np.array([[1.0, 1.0, 0.0, 1.0], [1.0, -1.0, 1.0, 0.0], [-1.0, 0.0, -1.0, 1.0]])
    b_ub = np.array([4.0, 3.0, 2.0])
    A_eq, b_eq = np.array([[1.0, 0.0, 1.0, 1.0]]), np.array([1.0])
    lower, upper = np.array([-1.0, -np.inf, -np.inf if free else -2.0, 0.0]), np.array([np.inf, 2.0, np.inf, 1.5])
    bounds = list(zip([None if np.isinf(v) else v for v in lower], [None if np.isinf(v) else v for v in upper]))
    Z = rng.uniform(-1, 1, (n_observations, 2))
    theta_true = rng.normal(size=(4, 2))
    decisions = []
    for z in Z:
        result = linprog(theta_true @ z + np.array([0.1, -0.2, 0.05, 0.3]), A_ub=A_ub, b_ub=b_ub, A_eq=A_eq,
                         b_eq=b_eq, bounds=bounds, method="highs-ds")
        assert result.status == 0
        decisions.append(result.x)
    ids = [f"{t:03d}" for t in range(n_observations)]
    tables = constraints_to_tables(A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, lower=lower, upper=upper)
    tables["features"] = pd.DataFrame({"id": ids, "f0": Z[:, 0], "f1": Z[:, 1]})
    tables["decisions"] = pd.DataFrame({"id": ids, **{f"x_{j}": np.array(decisions)[:, j] for j in range(4)}})
    problem, report = validate_inputs(*(tables[name] for name in TABLES), InverseParams())
    assert report.empty
    return problem, dict(A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds)


def test_row_space_shifts_off_the_equalities_fold_back_to_the_users_costs():
    problem, _ = _lp_problem()
    rng = np.random.default_rng(1)
    d = problem.Z.shape[1]
    truth = rng.normal(size=(4, d))
    W = rng.normal(size=(problem.lp.m, d))
    W[:1] = 0.0  # the one equality row: its shift moves the costs along the row space, not to zero
    theta_std = problem.std_map.D.T @ truth + problem.lp.A.T @ W
    theta, names = user_coefficients(theta_std, problem)
    assert names == ["x_0", "x_1", "x_2", "x_3"]  # the free x_2's two halves cost the same: one row
    np.testing.assert_allclose(theta, truth, rtol=1e-12, atol=1e-12)


def test_a_free_variable_whose_halves_differ_gets_a_row_per_side():
    problem, _ = _lp_problem()
    theta_std = problem.std_map.D.T @ np.ones((4, problem.Z.shape[1]))
    minus = int(np.flatnonzero(problem.std_map.D[2, 4:])[0]) + 4
    theta_std[minus] += 0.5  # x-_2 costs -1 + 0.5: x_2 costs 1 above 0 and 0.5 below
    theta, names = user_coefficients(theta_std, problem)
    assert names == ["x_0", "x_1", "x_2 (x >= 0)", "x_3", "x_2 (x < 0)"]
    np.testing.assert_allclose(theta[[2, 4]], [[1.0] * 3, [0.5] * 3])


@pytest.mark.parametrize("source", ["lp", "example"])
def test_the_folded_costs_decide_as_the_fitted_model_on_the_users_lp(source):
    """HiGHS on the user's LP with c = Theta z from theta.csv reaches the objective of the
    model's own prescriptions, for every training context."""
    if source == "lp":  # no free variable: MOM's two halves of one need not cost the same
        problem, lp = _lp_problem(free=False)
    else:
        tables = make_example_dataset(n_observations=30, seed=3)
        problem, _ = validate_inputs(*(tables[name] for name in TABLES), InverseParams())
        cons = problem.constraints
        lp = dict(A_ub=cons.A_ub, b_ub=cons.b_ub, A_eq=cons.A_eq, b_eq=cons.b_eq,
                  bounds=list(zip(np.where(np.isinf(cons.lower), None, cons.lower),
                                  np.where(np.isinf(cons.upper), None, cons.upper))))
    model = fit_standardized(MOM(lam=1e-2), problem.Z, problem.X_std, problem.lp, basis=problem.basis,
                             feature_names=problem.feature_names, ids=problem.ids)
    table = coefficients_table(model, problem)
    assert list(table["variable"]) == list(problem.decision_names)  # x_0.., no standard-form column
    assert list(table.columns) == ["variable", *problem.feature_names]
    theta = table[list(problem.feature_names)].to_numpy()
    decided = prescribe(model, problem)[list(problem.decision_names)].to_numpy()
    lp = {k: v for k, v in lp.items() if v is not None and (k == "bounds" or np.size(v))}
    for z, x_model in zip(problem.Z, decided):
        c = theta @ z
        best = linprog(c, method="highs", **lp)
        assert best.status == 0
        assert c @ x_model == pytest.approx(best.fun, rel=1e-7, abs=1e-7 * np.abs(c).sum())
