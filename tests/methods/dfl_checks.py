"""Checks shared by the tests of the decision-focused methods: noise-free recovery of linear
decisions, and counting the oracle calls of a lockstep grid."""

import numpy as np

from mom_pipeline.lp import StandardFormLP
from mom_pipeline.metrics import normalized_regret
from mom_pipeline.problems import generate_shortest_path


def noise_free_regrets(model) -> tuple[float, float]:
    """Fit `model` on 300 shortest-path samples whose costs are exactly linear in the features
    (c = Theta0 z, no noise) and return the normalized regrets of its decisions and of a zero
    model's on 300 test contexts."""
    trial = generate_shortest_path(300, 300, degree=1, cost_formula="pyepo_printed", seed=11)
    lp, Z, C = trial.lp, trial.train.Z, trial.train.C
    model.fit(Z, lp.solve(C).x, lp=lp, C=C if model.needs_costs else None)
    optimum = lp.solve(trial.test.C)
    regret = np.einsum("tj,tj->t", trial.test.C, model.decide(trial.test.Z, lp).x) - optimum.objective
    zero_regret = np.einsum("tj,tj->t", trial.test.C, lp.solve(np.zeros_like(trial.test.C)).x) - optimum.objective
    return normalized_regret(regret, optimum.objective), normalized_regret(zero_regret, optimum.objective)


def record_solve_calls(monkeypatch) -> list[int]:
    """From now on, the number of cost vectors of every `StandardFormLP.solve` call, in order."""
    calls = []
    original = StandardFormLP.solve
    monkeypatch.setattr(StandardFormLP, "solve",
                        lambda self, W, method="auto", need_basis=True: calls.append(len(W)) or original(
                            self, W, method, need_basis))
    return calls
