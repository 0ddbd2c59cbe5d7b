"""Benchmark: the thresholds of `mom_pipeline.solvers.policy`, measured.

For restricted hinge QPs of the shapes the working-set method meets (p unknowns, k working
rows, a linear pull g from the rows assumed violated), every path is timed on the same
problem: the p x p interior-point method, the k x k box-QP dual, and Clarabel on the primal
(the mature solver, the fallback). The policy's pick is starred; a row where the pick is not
the fastest (beyond noise) says a threshold should move. Objectives are compared with the
best one found (all paths are exact; differences are solver tolerances).

Run:  .venv/bin/python benchmarks/solver_policy.py
"""

from __future__ import annotations

import time

import clarabel
import numpy as np
import scipy.sparse as sp

from mom_pipeline.solvers import box_qp, hinge_qp_ipm, restricted_qp_method, solve_clarabel

# (p, k): both sides of each threshold of restricted_qp_method.
SHAPES = [(60, 2000), (240, 4000), (960, 3000), (1100, 3000), (1500, 800), (2100, 300), (2400, 1000)]
LAM, REPEATS = 1e-3, 2


def problem(p: int, k: int, seed: int):
    """Rows like MOM's: kron(reduced-cost row, features), with a few rows violated at the start."""
    rng = np.random.default_rng(seed)
    H = rng.normal(size=(k, p)) / np.sqrt(p)
    weight = 1.0 / k
    g = weight * H[: k // 10].sum(axis=0)
    return H, g, weight


def objective(H, g, weight, w) -> float:
    return float(0.5 * LAM * w @ w - g @ w + weight * np.maximum(0.0, 1.0 - H @ w).sum())


def clarabel_primal(H, g, weight):
    k, p = H.shape
    identity = sp.identity(k, format="csr")
    A = sp.vstack([sp.hstack([-sp.csr_matrix(H), -identity]), sp.hstack([sp.csr_matrix((k, p)), -identity])],
                  format="csr")
    b = np.concatenate([-np.ones(k), np.zeros(k)])
    P = sp.diags(np.concatenate([np.full(p, LAM), np.zeros(k)]), format="csc")
    q = np.concatenate([-g, np.full(k, weight)])
    return solve_clarabel(P, q, A, b, [clarabel.NonnegativeConeT(2 * k)], "benchmark QP").solution[:p]


def box_dual(H, g, weight):
    alpha = box_qp(H @ H.T / LAM, H @ g / LAM - 1.0, weight).solution
    return (g + H.T @ alpha) / LAM


PATHS = {"interior_point": lambda H, g, weight: hinge_qp_ipm(H, g, LAM, weight).solution,
         "box_dual": box_dual, "clarabel": clarabel_primal}


def timed(solve, *args):
    best, w = np.inf, None
    for _ in range(REPEATS):
        start = time.perf_counter()
        try:
            w = solve(*args)
        except RuntimeError:
            return np.nan, None
        best = min(best, time.perf_counter() - start)
    return best, w


def main() -> None:
    print(f"Restricted hinge QPs, lam = {LAM}; seconds (best of {REPEATS}); * = the policy's pick\n")
    print("| p | k | interior_point | box_dual | clarabel | pick is fastest | largest objective gap |")
    print("|---|---|---|---|---|---|---|")
    for seed, (p, k) in enumerate(SHAPES):
        H, g, weight = problem(p, k, seed)
        pick = restricted_qp_method(p, k, ball=False)
        times, values = {}, {}
        for name, solve in PATHS.items():
            times[name], w = timed(solve, H, g, weight)
            values[name] = objective(H, g, weight, w) if w is not None else np.nan
        best_value = np.nanmin(list(values.values()))
        gap = max(abs(v - best_value) / max(1.0, abs(best_value)) for v in values.values() if np.isfinite(v))
        cells = [("*" if name == pick else "") + (f"{t:.3f}" if np.isfinite(t) else "failed")
                 for name, t in times.items()]
        fastest = min((t, name) for name, t in times.items() if np.isfinite(t))[1]
        verdict = "yes" if times[pick] <= 1.25 * times[fastest] else f"no ({fastest})"
        print(f"| {p} | {k} | " + " | ".join(cells) + f" | {verdict} | {gap:.1e} |")


if __name__ == "__main__":
    main()
