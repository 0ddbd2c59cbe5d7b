"""Lambda tuned without costs on the shipped inverse-LP example, against today's fixed lambda = 1e-3.

For the example of the `inverse_example` pipeline (200 observed routes on a 4 x 4 grid, 4
contexts and an intercept) and the same data with one feature multiplied by 1e7 (a unit
change), three fits of the dual formulation:
* fixed: lambda = 1e-3 on the raw features (the former pipeline);
* fixed, standardized: lambda = 1e-3 with features standardized inside the fit;
* tuned: lambda chosen by 4-fold validation on held-out observations (x* alone), standardized.
Scores: held-out routes reproduced over the same 4 folds, and on 500 new contexts the share
of prescribed routes equal to the optimal route under the hidden travel times.

Run:  .venv/bin/python benchmarks/inverse_tuning.py
"""

from __future__ import annotations

import time

import numpy as np

LAMBDAS = np.logspace(-6, 2, 9)  # as inverse.tuning.lambdas in conf/base/parameters_inverse.yml

from mom_pipeline.allocator import keep_freed_memory
from mom_pipeline.inverse import make_example_dataset, validate_inverse_problem
from mom_pipeline.methods.cost_free_tuning import fit_standardized, kfold_indices, reproduced, validation_curve
from mom_pipeline.methods.mom import MOM

EXAMPLE = dict(n_observations=200, grid=(4, 4), n_features=4, seed=0)
N_NEW = 500
SCALED_FEATURE = 2  # rain_mm, multiplied by 1e7 in the second data set (rain in nanometres)


def problems(scale: float):
    tables = make_example_dataset(**EXAMPLE, n_new=N_NEW)
    features, new = tables["features"].copy(), tables["new_contexts"].copy()
    column = features.columns[1 + SCALED_FEATURE]
    features[column] *= scale
    new[column] *= scale
    bounds = tables["bounds"] if len(tables["bounds"]) else None
    problem, _ = validate_inverse_problem(features, tables["decisions"], tables["constraints"], tables["rhs"], bounds,
                                          add_intercept=True)
    fresh, _ = validate_inverse_problem(new, None, tables["constraints"], tables["rhs"], bounds, add_intercept=True,
                                        n_variables=problem.X_orig.shape[1], on_invalid="raise")
    return problem, fresh, tables["new_travel_times"].drop(columns="id").to_numpy(), column


def new_context_share(model, fresh, travel_times) -> float:
    """Share of new contexts whose prescribed route is the optimal one under the hidden times."""
    from mom_pipeline.lp import GridShortestPath

    structure = GridShortestPath(*EXAMPLE["grid"])
    optimal = structure.solve(travel_times).x
    prescribed = fresh.std_map.to_original(model.decide(fresh.Z, fresh.lp).x)
    return float(reproduced(prescribed, optimal).mean())


def heldout_share(make_fit, problem) -> float:
    shares = []
    for train, held_out in kfold_indices(problem.n_samples, 4, 0):
        model = make_fit(problem.Z[train], problem.X_std[train], problem.lp.subset(train))
        shares.append(reproduced(model.decide(problem.Z[held_out], problem.lp.subset(held_out)).x,
                                 problem.X_std[held_out]).mean())
    return float(np.mean(shares))


def main() -> None:
    print(f"inverse example: {EXAMPLE['n_observations']} observations, grid {EXAMPLE['grid']}, "
          f"{EXAMPLE['n_features']} contexts + intercept; dual formulation; {N_NEW} new contexts")
    header = f"{'data':>22} | {'fit':>26} | {'lambda':>7} | {'held-out reproduced':>19} | {'new contexts optimal':>20} | {'s':>6}"
    print(header)
    print("-" * len(header))
    for scale in (1.0, 1e7):
        problem, fresh, travel_times, column = problems(scale)
        label = "as shipped" if scale == 1 else f"{column} x 1e7"
        fits = {
            "fixed 1e-3, raw": lambda Z, X, lp, lam=1e-3: MOM(lam=lam, formulation="dual").fit(Z, X, lp=lp),
            "fixed 1e-3, standardized": lambda Z, X, lp, lam=1e-3: fit_standardized(
                MOM(lam=lam, formulation="dual"), Z, X, lp),
        }
        started = time.perf_counter()
        curve = validation_curve({"formulation": "dual"}, problem.Z, problem.X_std, problem.lp, LAMBDAS, n_folds=4,
                                 seed=0)
        chosen = float(curve.loc[curve["chosen"], "lam"].iloc[0])
        tuning_seconds = time.perf_counter() - started
        fits[f"tuned (4-fold, {tuning_seconds:.0f} s)"] = lambda Z, X, lp, lam=chosen: fit_standardized(
            MOM(lam=lam, formulation="dual"), Z, X, lp)
        for name, fit in fits.items():
            lam = chosen if name.startswith("tuned") else 1e-3
            started = time.perf_counter()
            try:
                held = f"{100 * heldout_share(fit, problem):18.1f}%"
                new = f"{100 * new_context_share(fit(problem.Z, problem.X_std, problem.lp), fresh, travel_times):19.1f}%"
            except (RuntimeError, ValueError) as error:
                held, new = f"{'failed':>19}", f"{str(error)[:20]:>20}"
            print(f"{label:>22} | {name:>26} | {lam:7.0e} | {held} | {new} | {time.perf_counter() - started:6.1f}",
                  flush=True)


if __name__ == "__main__":
    keep_freed_memory()  # the malloc settings a Kedro run works under (mom_pipeline.allocator)
    main()
