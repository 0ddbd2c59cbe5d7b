"""Benchmark of the decision-focused learning baselines (PFYL, DBB) on the DFL benchmark's data.

* PFYL fit at T = 1000 on the 5x5 shortest path, degree 4, no noise (PyEPO's generator),
  M = 10 perturbations, 10 epochs of batches of 32, Adam step 0.05, sigma = 1: the fit time
  (the target is <= 2 s) and the normalized regret on 1000 test samples (PyEPO's PFYL scores
  about 0.006-0.008 there), next to least squares and SPO+ fitted in the same run.
* One epoch of PFYL and of DBB with the batched oracle vs the same epoch with a per-sample
  loop of HiGHS solves (what a generic implementation does), at T = 250.
Usage: python benchmarks/dfl_speed.py
"""

from __future__ import annotations

import time

import numpy as np

from mom_pipeline.lp import LPSolution, StandardFormLP, solve_lp_batch
from mom_pipeline.methods import DBB, OLS, PFYL, SPOPlus
from mom_pipeline.metrics import normalized_regret
from mom_pipeline.problems import generate_shortest_path


class HighsLoopLP(StandardFormLP):
    """The same LP family solved one sample at a time with HiGHS (the reference)."""

    def solve(self, C, method: str = "auto", need_basis: bool = True):
        solutions = [solve_lp_batch(self.A, self.b, c[None]) for c in np.atleast_2d(C)]
        return LPSolution(x=np.vstack([s.x for s in solutions]),
                          objective=np.concatenate([s.objective for s in solutions]), basis=None)


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    trial = generate_shortest_path(1000, 1000, degree=4, eps_bar=0.0, cost_formula="pyepo", seed=0)
    lp, Z, C = trial.lp, trial.train.Z, trial.train.C
    optimum = lp.solve(trial.test.C, need_basis=False)

    def regret_of(model) -> float:
        decisions = model.decide(trial.test.Z, lp).x
        return normalized_regret(np.einsum("tj,tj->t", trial.test.C, decisions) - optimum.objective, optimum.objective)

    print("Fits at T = 1000, shortest path 5x5, degree 4, no noise (PyEPO's data); 1000 test samples")
    models = {"PFYL (M = 10, 10 epochs)": PFYL(n_perturbations=10, n_epochs=10, step_size=0.05, sigma=1.0),
              "DBB (10 epochs)": DBB(n_epochs=10, step_size=0.01, lam_interp=10.0),
              "SPO+ (10 epochs)": SPOPlus(n_epochs=10, batch_size=32, lam=0.0, step_size=1.0),
              "least squares": OLS()}
    for name, model in models.items():
        seconds, _ = timed(lambda: model.fit(Z, lp=lp, C=C))
        print(f"  {name:26s} fit {seconds:6.2f} s   normalized regret {regret_of(model):.4f}")

    print("One epoch (batches of 32, T = 250): batched oracle vs a per-sample HiGHS loop")
    small = generate_shortest_path(250, 0, degree=4, cost_formula="pyepo", seed=1)
    X = small.lp.solve(small.train.C).x
    loop_lp = HighsLoopLP(A=small.lp.A, b=small.lp.b)
    for name, make in {"PFYL (M = 10)": lambda: PFYL(n_epochs=1), "DBB": lambda: DBB(n_epochs=1)}.items():
        fast, _ = timed(lambda: make().fit(small.train.Z, X, lp=small.lp, C=small.train.C))
        slow, _ = timed(lambda: make().fit(small.train.Z, X, lp=loop_lp, C=small.train.C))
        print(f"  {name:14s} batched oracle {fast:7.3f} s   per-sample HiGHS {slow:7.3f} s   ratio {slow / fast:6.1f}x")


if __name__ == "__main__":
    main()
