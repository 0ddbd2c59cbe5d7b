"""Benchmark: one Newton system of the box-QP interior-point method, built and factored the
former way and the current way.

Former: Q + np.diag(d) (two k x k temporaries), a finiteness scan of the sum, then
`scipy.linalg.cho_factor` (another scan and a copy into column-major order). Current
(`interior_point.box_qp`): a copy of Q with d added on its diagonal in place, factored by
`solvers.dense_cholesky.cho_factor_symmetric` (the transposed view goes to LAPACK as it is).
Both are timed on the same matrices, one BLAS thread (as the solvers run), best of several
repeats, with the largest difference of their solutions. A third column times the current way
with LAPACK's upper factor instead of the lower one it uses (OpenBLAS factors the lower one
1.2-1.4x faster at the sizes of the box QPs and margin sets, k = 100-700).

Run:  .venv/bin/python benchmarks/dense_cholesky.py
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import threadpoolctl

from lp_oracles import best_time  # benchmarks/ is the script's directory, on sys.path
from mom_pipeline.solvers.dense_cholesky import cho_factor_symmetric, cho_solve_factor

SIZES = [150, 300, 500, 1000, 2000]


def former(Q: np.ndarray, d: np.ndarray):
    system = Q + np.diag(d)
    if not np.isfinite(system).all():
        raise ValueError("non-finite system")
    return scipy.linalg.cho_factor(system)


def current(Q: np.ndarray, d: np.ndarray):
    system = Q.copy()
    system[np.diag_indices(Q.shape[0])] += d
    return cho_factor_symmetric(system, overwrite=True)


def current_upper(Q: np.ndarray, d: np.ndarray):
    """`current` with LAPACK's upper factor (the solvers' choice before 2026-11-28)."""
    system = Q.copy()
    system[np.diag_indices(Q.shape[0])] += d
    factor, info = scipy.linalg.lapack.dpotrf(system.T, lower=False, overwrite_a=True, clean=False)
    if info != 0:
        raise np.linalg.LinAlgError(f"dpotrf info {info}")
    return factor, False


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"{'k':>6s} {'former ms':>10s} {'current ms':>11s} {'ratio':>6s} {'upper factor ms':>16s} "
          f"{'upper / current':>16s} {'max solution diff':>18s}")
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        for k in SIZES:
            A = rng.standard_normal((k, k))
            Q = A @ A.T  # row-major, as the solvers build them
            d = rng.uniform(1.0, 2.0, k)
            rhs = rng.standard_normal(k)
            repeats = max(3, int(3e9 / k**3))
            reference = best_time(lambda: former(Q, d), repeats)
            ours = best_time(lambda: current(Q, d), repeats)
            upper = best_time(lambda: current_upper(Q, d), repeats)
            solution = cho_solve_factor(current(Q, d), rhs)
            diff = max(np.abs(solution - scipy.linalg.cho_solve(former(Q, d), rhs)).max(),
                       np.abs(solution - cho_solve_factor(current_upper(Q, d), rhs)).max())
            print(f"{k:6d} {1e3 * reference:10.2f} {1e3 * ours:11.2f} {reference / ours:6.2f} {1e3 * upper:16.2f} "
                  f"{upper / ours:16.2f} {diff:18.1e}")


if __name__ == "__main__":
    main()
