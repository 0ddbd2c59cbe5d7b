"""Benchmark: the malloc settings of `mom_pipeline.allocator` against glibc's defaults.

The paper's shortest path (T = 1000, degree 4, 5 x 5 grid) and the 9-value lambda grid 1e-6..1e2,
fitted by `MOM.fit_many` in the basis formulation (the LP solver's bases) and in the dual
formulation (the block interior-point method, one thread), each in a child process: with the
package's settings, and with MOM_PIPELINE_MALLOC=default (glibc's defaults, the reference),
alternately, `--rounds` times. Prints wall seconds, system seconds and page faults (minor) per
fit, and checks that both settings give the same coefficients bit for bit.

Run:  .venv/bin/python benchmarks/page_faults.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

LAMBDAS = np.logspace(-6, 2, 9)


def measured(function) -> tuple[object, dict]:
    usage, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    result = function()
    seconds, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF)
    return result, dict(seconds=seconds, system=after.ru_stime - usage.ru_stime, faults=after.ru_minflt - usage.ru_minflt)


def worker() -> dict:
    from mom_pipeline.allocator import keep_freed_memory
    from mom_pipeline.methods.mom import MOM
    from mom_pipeline.problems import generate_shortest_path

    trial = generate_shortest_path(1000, 0, degree=4, seed=0)
    Z, lp = trial.train.Z, trial.lp
    solution = lp.solve(trial.train.C)
    out = dict(settings=keep_freed_memory())
    for formulation in ("basis", "dual"):
        extra = dict(basis=solution.basis) if formulation == "basis" else {}
        models, out[formulation] = measured(lambda: MOM.fit_many(
            [MOM(lam=lam, formulation=formulation) for lam in LAMBDAS], Z, solution.x, lp=lp, **extra))
        out[formulation]["coef_sha1"] = hashlib.sha1(np.stack([m.coef_ for m in models]).tobytes()).hexdigest()
    return out


def child(default: bool) -> dict:
    env = {key: value for key, value in os.environ.items() if key != "MOM_PIPELINE_MALLOC"}
    if default:
        env["MOM_PIPELINE_MALLOC"] = "default"
    result = subprocess.run([sys.executable, __file__, "--worker"], env=env, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(rounds: int) -> None:
    print("MOM.fit_many over the 9-value lambda grid, shortest path T = 1000 (one thread), each in a child process")
    header = f"{'round':>5} {'malloc':>9} | {'formulation':>11} {'seconds':>8} {'system s':>8} {'page faults':>11}"
    print(header)
    print("-" * len(header))
    runs = {True: [], False: []}
    for round_ in range(1, rounds + 1):
        for default in (False, True):
            run = child(default)
            assert run["settings"] is (not default), run["settings"]
            runs[default].append(run)
            for formulation in ("basis", "dual"):
                r = run[formulation]
                print(f"{round_:>5} {'default' if default else 'package':>9} | {formulation:>11} {r['seconds']:8.2f} "
                      f"{r['system']:8.2f} {r['faults']:11,d}")
    print("-" * len(header))
    for formulation in ("basis", "dual"):
        hashes = {run[formulation]["coef_sha1"] for runs_ in runs.values() for run in runs_}
        assert len(hashes) == 1, f"{formulation}: the settings changed the coefficients"
        best = {default: min(run[formulation]["seconds"] for run in runs[default]) for default in runs}
        print(f"{formulation}: best of {rounds} {best[True]:.2f} s with glibc's defaults, {best[False]:.2f} s with the "
              f"package's settings: {best[True] / best[False]:.2f}x; coefficients identical bit for bit")


if __name__ == "__main__":
    if "--worker" in sys.argv:
        print(json.dumps(worker()))
    else:
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("--rounds", type=int, default=2)
        main(parser.parse_args().rounds)
