"""RouteMOM (the working set over arcs) on grids and real road networks, against today's dense
dual formulation (`MOM(formulation="dual")`) where that still runs, in the same run.

Each case runs in its own process (its peak memory is that process's maximum resident size):

    python benchmarks/route_fit.py                       # the default cases (a few minutes)
    python benchmarks/route_fit.py --cases grid5:1000:per_arc:dense sioux:1000:shared
    python benchmarks/route_fit.py --networks-dir /path/to/tntp/networks

A case is network:T:model[:dense][:cold], network one of grid5, grid10, grid20 (the paper's grids,
the routes of the paper's shortest-path costs), a TNTP network found under MOM_NETWORKS_DIR
(sioux, berlin, anaheim) or a synthetic city (city3k, city40k: grids of two-way streets and
avenues with 50 and 100 zones; routes from the project's BPR generator, noise-free), model per_arc or
shared (shared: free-flow time and the baseline delay as arc attributes; on grids two random
attributes); ":dense" also fits today's dual formulation on the same data (per-arc only);
":cold" also fits the working set without its pilot start (`solve_network_margin(pilot=False)`);
":arcs" (per-arc) also fits the working set over arcs that the detours replaced (record 030);
":detours" (per-arc) also fits the detour cycles, which RouteMOM takes where the dense method
does not fit (record 031);
":heldout" also scores 1,000 new contexts of the same generator (the share whose true route is
the shortest under the fitted costs; TNTP networks and cities); ":tuned" fits at the lambda
that `route_validation_curve` picks from observed routes alone (4 folds on the first
TUNING_SAMPLES observations, lambdas TUNING_LAMBDAS), as the `inverse_routes` pipeline does,
instead of LAM (TNTP networks and cities); ":lam<value>" (e.g. ":lam1e-4") fits as ":tuned" does,
at that lambda, without choosing it.
Printed per case: seconds (wall, and CPU of the process: the other jobs on a shared machine
do not enter it), rounds, working rows per sample, the certified relative gap, the
peak memory, and with ":dense" the dense method's seconds and objective (and the ratio).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

DEFAULT_CASES = ["grid5:1000:per_arc:dense:detours", "sioux:1000:shared:heldout", "berlin:1000:shared:cold:heldout",
                 "anaheim:1000:shared:cold:heldout", "sioux:300:per_arc:detours"]
TNTP = {"sioux": "SiouxFalls", "berlin": "Berlin-Friedrichshain", "anaheim": "Anaheim"}
#: Synthetic cities (`generate.grid_network`: rows, cols, centroids): 1,000 nodes and 3,870
#: links; 10,000 nodes and 39,600 links.
CITIES = {"city3k": (25, 40, 50), "city40k": (100, 100, 100)}
#: New contexts scored by ":heldout" (TNTP networks and cities).
HELD_OUT = 1000
LAM = 1e-2
#: ":tuned": the observations and lambdas of the cost-free choice of lambda.
TUNING_SAMPLES = 1000
TUNING_LAMBDAS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)
_ARC_FEATURES = {"shared": ("free_flow_time", "baseline_delay"), "per_arc": ()}


def _grid_case(size: int, T: int, model: str, rng):
    from mom_pipeline.problems import generate_shortest_path

    trial = generate_shortest_path(n_train=T, n_test=1, degree=4, grid=(size, size), n_features=8, seed=0)
    X = trial.lp.solve(trial.train.C).x.round()
    arcs = trial.lp.structure.arcs
    F = rng.uniform(1, 3, (len(arcs), 2)) if model == "shared" else None
    return dict(Z=trial.train.Z, X=X, tails=arcs[:, 0], heads=arcs[:, 1], n_nodes=size * size, F=F, usable=None,
                lp=trial.lp)


def _tntp_case(name: str, T: int, model: str, n_new: int = 0):
    from mom_pipeline.networks import files, generate, tntp

    if name in CITIES:
        rows, cols, centroids = CITIES[name]
        network, trips = generate.grid_network(rows, cols, seed=0, centroids=centroids)
    else:
        net_file, trips_file = files.locate_network(TNTP[name])
        network, trips = tntp.read_tntp_network(net_file), tntp.read_tntp_trips(trips_file)
    return _routes_case(network, trips, T, model, n_new)


def _routes_case(network, trips, T: int, model: str, n_new: int):
    from mom_pipeline.networks import generate
    from mom_pipeline.networks.routes import validate_route_problem

    tables = generate.generate_routes(network, trips, n_observations=T, n_new=n_new, seed=0)
    network = tables["network"]
    problem, _ = validate_route_problem(network, tables["routes"], tables["features"])  # the intercept added
    F = network.attributes[list(_ARC_FEATURES["shared"])].to_numpy(dtype=float) if model == "shared" else None
    case = dict(Z=problem.Z, X=problem.X, tails=network.tails, heads=network.heads, n_nodes=network.n_nodes, F=F,
                usable=problem.usable, lp=None, problem=problem)
    if n_new:
        new_features = tables["new_contexts"].drop(columns=["origin", "destination"])
        case["new"], _ = validate_route_problem(network, tables["new_routes"], new_features)
    return case


def _held_out_share(fit, inputs, route_model=None) -> float:
    """The share of the new contexts whose true route is the shortest under the fitted costs
    (of `route_model`, the pipeline's fit in the user's units, when given)."""
    from mom_pipeline.networks import shortest_routes
    from mom_pipeline.networks.fitting import same_routes

    new = inputs["new"]
    if route_model is not None:
        routes, _ = route_model.routes(new.network, new.Z, new.origins, new.destinations)
        return float(same_routes(routes, new.X).mean())
    routes = shortest_routes(new.network, fit.predict(new.Z, arc_features=inputs["F"]), new.origins,
                             new.destinations, new.usable)
    return float(same_routes(routes, new.X).mean())


def _tuned_lambda(inputs, model: str) -> tuple[float, dict]:
    """(the lambda `route_validation_curve` chooses on the first TUNING_SAMPLES observed routes,
    what the choice took)."""
    from mom_pipeline.networks.fitting import route_validation_curve

    problem = inputs["problem"]
    subset = problem.subset(np.arange(min(problem.n_samples, TUNING_SAMPLES)))
    started = time.process_time()
    curve = route_validation_curve(subset, TUNING_LAMBDAS, n_folds=4, seed=0, cost_model=model,
                                   arc_features=_ARC_FEATURES[model])
    chosen = curve.loc[curve["chosen"]].iloc[0]
    return float(chosen["lam"]), dict(tuning_cpu_seconds=round(time.process_time() - started, 2),
                                      tuning_share=round(float(chosen["reproduced_share"]), 4))


def run_case(case: str) -> dict:
    from mom_pipeline.methods import MOM
    from mom_pipeline.methods.route_mom import RouteMOM

    network, T, model, *flags = case.split(":")
    T = int(T)
    rng = np.random.default_rng(0)
    inputs = (_grid_case(int(network[4:]), T, model, rng) if network.startswith("grid")
              else _tntp_case(network, T, model, HELD_OUT if "heldout" in flags else 0))
    lam, tuning = LAM, {}
    fixed = [float(flag[3:]) for flag in flags if flag.startswith("lam")]
    if "tuned" in flags:
        lam, tuning = _tuned_lambda(inputs, model)
    elif fixed:
        lam = fixed[0]
    started, cpu_started = time.perf_counter(), time.process_time()
    if "tuned" in flags or fixed:  # the pipeline's fit: standardized inputs at the chosen or given lambda
        from mom_pipeline.networks.fitting import fit_route_model

        route_model = fit_route_model(inputs["problem"], lam, cost_model=model, arc_features=_ARC_FEATURES[model])
        fit = route_model.estimator
    else:
        route_model = None
        fit = RouteMOM(lam=lam).fit(inputs["Z"], inputs["X"], tails=inputs["tails"], heads=inputs["heads"],
                                    n_nodes=inputs["n_nodes"], arc_features=inputs["F"], usable=inputs["usable"])
    seconds = time.perf_counter() - started
    row = dict(case=case, arcs=len(inputs["tails"]), T=T, model=model, seconds=round(seconds, 2),
               cpu_seconds=round(time.process_time() - cpu_started, 2),
               rounds=fit.n_iter_, rows_per_sample=round(fit.solver_info_["working_rows"] / T, 1),
               method=fit.solver_info_.get("solver", fit.solver_info_.get("path")),
               relative_gap=float(fit.certificate_["relative_gap"]), objective=fit.objective_, lam=lam, **tuning)
    if "heldout" in flags:
        row["held_out_reproduced"] = round(_held_out_share(fit, inputs, route_model), 4)
    if "cold" in flags:
        from mom_pipeline.solvers.network_margin import network_samples, solve_network_margin

        data = network_samples(inputs["tails"], inputs["heads"], inputs["n_nodes"], inputs["X"], inputs["Z"],
                               inputs["F"], inputs["usable"])
        started = time.perf_counter()
        cold = solve_network_margin(data, LAM, pilot=False)
        row.update(cold_seconds=round(time.perf_counter() - started, 2), cold_rounds=cold.iterations,
                   cold_objective_difference=abs(cold.objective - fit.objective_) / cold.objective)
        row["ratio_cold_over_piloted"] = round(row["cold_seconds"] / seconds, 2)
    if "arcs" in flags:  # the per-arc model by the working set over arcs (before record 030)
        from mom_pipeline.solvers.network_margin import network_samples, solve_network_margin

        data = network_samples(inputs["tails"], inputs["heads"], inputs["n_nodes"], inputs["X"], inputs["Z"],
                               inputs["F"], inputs["usable"])
        started, cpu = time.perf_counter(), time.process_time()
        from mom_pipeline.solvers.network_cycles import cycle_space_dimension

        cycles = cycle_space_dimension(data.tails, data.heads, data.n_nodes)
        arcs = solve_network_margin(data, lam, method="clarabel" if cycles * data.d <= 1000 else "blocks")
        row.update(arcs_seconds=round(time.perf_counter() - started, 2), arcs_cpu_seconds=round(time.process_time() - cpu, 2),
                   arcs_rounds=arcs.iterations, arcs_objective_difference=abs(arcs.objective - fit.objective_) / arcs.objective)
        row["ratio_arcs_over_route_cpu"] = round(row["arcs_cpu_seconds"] / row["cpu_seconds"], 2)
    if "detours" in flags:  # the detour cycles, RouteMOM's per-arc method beyond the dense method's memory
        from mom_pipeline.solvers.network_margin import network_samples, solve_network_margin

        data = network_samples(inputs["tails"], inputs["heads"], inputs["n_nodes"], inputs["X"], inputs["Z"],
                               inputs["F"], inputs["usable"])
        cpu = time.process_time()
        detours = solve_network_margin(data, lam, method="detours")
        row.update(detours_cpu_seconds=round(time.process_time() - cpu, 2), detours_rounds=detours.iterations,
                   detours_objective_difference=abs(detours.objective - fit.objective_) / detours.objective)
        row["ratio_detours_over_route_cpu"] = round(row["detours_cpu_seconds"] / row["cpu_seconds"], 2)
    if "dense" in flags and inputs["lp"] is not None:
        started, cpu = time.perf_counter(), time.process_time()
        reference = MOM(lam=LAM, formulation="dual").fit(inputs["Z"], inputs["X"], lp=inputs["lp"])
        row.update(dense_seconds=round(time.perf_counter() - started, 2),
                   dense_cpu_seconds=round(time.process_time() - cpu, 2), dense_objective=reference.objective_,
                   objective_difference=abs(fit.objective_ - reference.objective_) / reference.objective_)
        row["ratio_dense_over_route"] = round(row["dense_seconds"] / seconds, 2)
    row["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", default=DEFAULT_CASES)
    parser.add_argument("--networks-dir", default=None, help="folder of the TNTP networks (MOM_NETWORKS_DIR)")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.networks_dir:
        os.environ["MOM_NETWORKS_DIR"] = args.networks_dir
    if args.one:
        print(json.dumps(run_case(args.one)))
        return
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
    for case in args.cases:
        done = subprocess.run([sys.executable, __file__, "--one", case], capture_output=True, text=True)
        if done.returncode:
            print(f"{case}: failed\n{done.stderr[-2000:]}")
            continue
        print(json.dumps(json.loads(done.stdout.strip().splitlines()[-1])))
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
