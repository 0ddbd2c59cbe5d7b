"""MOM from observed routes on a network LP, by a working set over arcs.

The problem (the dual formulation of MOM on a shortest-path LP; no basis, never the costs):

    min_{Theta, y, s >= 0}  (lam/2) ||Theta||_F^2 + (1/T) sum_t sum_{a in rows_t} s_ta
    s.t.  c_ta - y_t[tail a] + y_t[head a]  = 0          on the arcs of route t
          c_ta - y_t[tail a] + y_t[head a] >= 1 - s_ta   on rows_t (usable arcs off route t)

with c_t = F Theta z_t (F = I: the per-arc model, Theta (n, d); F an (n, q) table of arc
attributes: the shared model, Theta (q, d)). The rows are linear in Theta either way.

Why a working set: for a given Theta the potentials of the nodes on route t are fixed by the
route's equalities (y[v] = the route's predicted cost from v to its destination), and the
other constraints are difference constraints y[tail] <= y[head] + w_a. They hold with s = 0
off the working set W exactly when a Bellman-Ford relaxation from the fixed route nodes
(edges head -> tail of length w_a = c_a - 1 + s_a) reaches no route node below its fixed
potential and finds no negative cycle. So: solve the QP restricted to the rows of W (a
relaxation of the whole problem), relax once per sample, add the arcs of every violated
detour (its predecessor chain) and of every negative cycle, and repeat. When nothing is
violated the restricted optimum, extended by the relaxed potentials, is feasible for the
whole problem at the same objective: it is the optimum. Only the rows that carry dual flow at
the optimum need to be in W, a small share of the arcs on road networks.

The restricted QP is solved by Clarabel on its sparse form. The optimum is certified
independently of it (`network_margin_certificate`): the extended potentials give the primal
objective, the restricted QP's multipliers (flows on the working arcs, completed along the
route by conservation) give a Lagrange-dual lower bound.

Ground floor: imports nothing from the project but `solvers.result` (numpy, scipy, clarabel).
"""

from __future__ import annotations

import dataclasses
import logging
import time

import numpy as np

from . import policy
from .network_problem import (NetworkSamples, incidence_matrix, incidence_network, network_margin_certificate,
                              network_margin_objective, network_samples, predicted_costs, route_flows, route_order,
                              route_potentials)
from .network_cycles import cycle_space_dimension, short_cycle_basis
from .network_detours import solve_network_detours
from .network_restricted import solve_restricted, solve_restricted_blocks
from .network_separation import feasible_potentials, relax
from .result import SolverResult

__all__ = ["NetworkSamples", "incidence_matrix", "incidence_network", "network_margin_certificate",
           "network_margin_objective", "network_samples", "predicted_costs", "route_flows", "route_order",
           "solve_network_margin"]

logger = logging.getLogger(__name__)

#: Rows within this of their margin (1 + BAND) would count as violated when the working set
#: grows. 0: only rows the relaxation finds violated join. A band of 1e-3 to 0.3 kept more rows
#: and took longer (Anaheim shared, T = 100: 8.1 s at 0, 11.7 s at 1e-3, 14.6 s at 1e-2, 25 s at 0.1).
BAND = 0.0
#: A row counts as violated when it is off by more than this relative to the potential it
#: would lower (at least 1): the restricted QP's own accuracy (QP_TOL); at 1e-9 of the route
#: potentials' largest value times the potential, violations of 1e-5 per row went unseen on
#: Anaheim at lam = 1e-4 (costs grow as lam falls) and the certificate failed at 1.3e-6.
VIOLATION_TOL = 1e-10
MAX_ROUNDS = 50
#: A fit logs each round at INFO once it has run this many seconds (DEBUG before).
PROGRESS_AFTER = 10.0
#: A working row whose flow (multiplier times T, in [0, 1]) and slack are below this leaves the
#: working set after its round (`solve_network_margin(shrink=True)`, the default of a fit that
#: starts without a pilot): an interior-point optimum leaves round-off on both. A pilot's rows
#: are kept: dropping them brought them back (T = 1,000, shared: Anaheim 9 rounds against 5,
#: 1.4x the CPU; a 3,870-link city 15 against 8; 5 x 5 grid per-arc 10 against 5; record 025),
#: while from the rows next to the routes dropping pays (Anaheim T = 200: 2.2 s against 3.0 s).
SHRINK_FLOW = 1e-6


#: A fit of at least PILOT_FACTOR * PILOT_MIN_SAMPLES samples starts from a pilot: the same fit
#: on every PILOT_FACTOR-th sample (itself piloted the same way), whose optimum's rows within
#: PILOT_BAND of their margin, on all samples, are the first working set. Without it the first
#: restricted optimum knows only the rows next to the routes and one round carries most rows
#: (Anaheim, shared model, T = 300: 71,000 rows); with band 0 that happened after the pilot on
#: Berlin (T = 1,000: 101,000 rows, 122 s; band 0.1: 32 s; Anaheim 127 s at 0.1, 91 s at 0); record 021.
PILOT_FACTOR = 8
PILOT_MIN_SAMPLES = 30
PILOT_BAND = 0.1


def pilot_working_set(data: NetworkSamples, lam: float, orders: list[np.ndarray] | None = None,
                      **fit) -> tuple[np.ndarray | None, dict | None]:
    """(the first working set, what the pilot took) from a pilot fit on every PILOT_FACTOR-th
    sample, or (None, None) when the fit is too small to need one. The working set: the rows
    within PILOT_BAND of their margin at the pilot's optimum (with their detour chains, as
    `relax` finds them), on every sample."""
    if data.T < PILOT_FACTOR * PILOT_MIN_SAMPLES:
        return None, None
    started = time.perf_counter()
    chosen = np.linspace(0, data.T - 1, data.T // PILOT_FACTOR).round().astype(np.int64)
    pilot = solve_network_margin(data_subset(data, chosen), lam, **fit)
    C = predicted_costs(pilot.solution[0], data)
    relaxation = relax(C, np.zeros_like(C), data, route_potentials(C, data, route_order(data) if orders is None else orders),
                       np.zeros_like(data.rows), PILOT_BAND, VIOLATION_TOL)
    info = dict(samples=int(chosen.size), rounds=pilot.iterations, seconds=time.perf_counter() - started,
                pilot=pilot.extra.get("pilot"))
    logger.debug("network MOM pilot on %d of %d samples: %d rounds, %.1f s, %.1f rows per sample to start",
                 chosen.size, data.T, pilot.iterations, info["seconds"], relaxation.add.sum() / data.T)
    return relaxation.add, info


def data_subset(data: NetworkSamples, samples: np.ndarray) -> NetworkSamples:
    """The same network with only the given samples."""
    return dataclasses.replace(data, routes=data.routes[samples], rows=data.rows[samples], Z=data.Z[samples],
                               destinations=data.destinations[samples], origins=data.origins[samples])


def initial_working_set(data: NetworkSamples) -> np.ndarray:
    """The rows that leave or enter their route: where every detour starts and ends."""
    on_route = np.zeros((data.T, data.n_nodes), dtype=bool)
    t_index, arcs = np.nonzero(data.routes)
    on_route[t_index, data.tails[arcs]] = True
    on_route[t_index, data.heads[arcs]] = True
    return data.rows & (on_route[:, data.tails] | on_route[:, data.heads])


def _progress_level(started: float) -> int:
    """INFO for a fit running longer than PROGRESS_AFTER, else DEBUG: a tuning grid's many short
    fits would flood the console."""
    return logging.INFO if time.perf_counter() - started > PROGRESS_AFTER else logging.DEBUG


RESTRICTED_METHODS = ("auto", "detours", "blocks", "clarabel")


def cost_basis(data: NetworkSamples) -> tuple[np.ndarray, bool]:
    """(the arc features the restricted QP works on, whether they are the per-arc model's
    cycle space). Per-arc model: an orthonormal basis U of the incidence matrix's null space
    (reduced costs do not see c + A'y, and the regularizer is smallest with no part of Theta
    outside U: Theta = U W, n - rank(A) of n arcs); shared model: its arc features."""
    if data.F is not None:
        return data.F, False
    import scipy.linalg

    A = incidence_matrix(data.tails, data.heads, data.n_nodes).toarray()
    return scipy.linalg.null_space(A), True


def solve_network_margin(data: NetworkSamples, lam: float, band: float = BAND, tol: float = VIOLATION_TOL,
                         max_rounds: int = MAX_ROUNDS, working: np.ndarray | None = None,
                         threads: int = 1, method: str = "auto", shrink: bool | None = None,
                         pilot: bool = True) -> SolverResult:
    """The exact MOM optimum on a network LP by the working set over arcs (module docstring).

    method: "detours" (the per-arc model only: the working set of detour cycles of
    `network_detours`, the default there), or how each restricted QP of the working set over
    arcs is solved: "blocks" (the block interior-point method on
    `tree_blocks`, in the cost basis of `cost_basis`), "clarabel" (its sparse form) or "auto"
    (`policy.network_restricted_method` by the number of coefficients). pilot: start large fits
    from `pilot_working_set` (unless `working` is given). shrink: drop the rows without flow or
    slack after each round (once each); None: only when the fit starts from the rows next to
    the routes (no pilot and no `working` given).

    Returns a `SolverResult`: solution (Theta, potentials (T, nodes), row flows (T, n)), the
    objective, iterations = working-set rounds, the certificate
    (`network_margin_certificate`), extra: working_rows, history (one dict per round)."""
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be a positive finite number; got {lam}")
    if method not in RESTRICTED_METHODS:
        raise ValueError(f"method must be one of {RESTRICTED_METHODS}; got {method!r}")
    if method == "auto":
        coefficients = data.q if data.F is not None else cycle_space_dimension(data.tails, data.heads, data.n_nodes)
        # A given working set of arcs is a start for the working set over arcs.
        method = policy.network_restricted_method(coefficients * data.d, per_arc=data.F is None and working is None)
    if method == "detours":  # the per-arc model on detour cycles (`network_detours`)
        if working is not None:
            raise ValueError("method='detours' starts from its own working set of detours; working must be None")
        return solve_network_detours(data, lam, tol=tol, max_rounds=max_rounds)
    orders = route_order(data)
    pilot_info = None
    if working is None and pilot:
        working, pilot_info = pilot_working_set(data, lam, orders, band=band, tol=tol, max_rounds=max_rounds,
                                                threads=threads, method=method, shrink=shrink)
    if shrink is None:
        shrink = working is None
    working = initial_working_set(data) if working is None else (np.asarray(working, dtype=bool) & data.rows)
    basis, cycle_space = cost_basis(data) if method == "blocks" else (None, False)
    # Per-arc model: Clarabel solves for W in Theta = B W on a sparse cycle basis B.
    cycles = short_cycle_basis(data.tails, data.heads, data.n_nodes) if method == "clarabel" and data.F is None else None
    history = []
    dropped = np.zeros_like(working)
    started = time.perf_counter()
    for round_ in range(1, max_rounds + 1):
        restricted = None
        if method == "blocks":
            try:
                restricted = solve_restricted_blocks(data, working, lam, orders, basis, threads)
                if cycle_space:
                    restricted.Theta = basis @ restricted.Theta
            except RuntimeError as error:  # the block method stalled twice: Clarabel solves this round
                logger.info("network MOM round %d: %s; the round goes to Clarabel", round_, error)
        if restricted is None:
            restricted = solve_restricted(data, working, lam, threads, basis=cycles, orders=orders)
        C = predicted_costs(restricted.Theta, data)
        fixed = route_potentials(C, data, orders)
        relaxation = relax(C, restricted.S, data, fixed, working, band, tol)
        added = int(relaxation.add.sum())
        history.append(dict(round=round_, working_rows=int(working.sum()), added=added,
                            infeasible_samples=int((~relaxation.feasible).sum()), qp_seconds=restricted.seconds,
                            qp_iterations=restricted.iterations, sweeps=relaxation.sweeps))
        logger.log(_progress_level(started), "network MOM round %d: %d working rows (%.1f per sample), %d samples with violated rows, "
                   "%d rows added; QP %.1f s, %d iterations", round_, working.sum(), working.sum() / data.T,
                   (~relaxation.feasible).sum(), added, restricted.seconds, restricted.iterations)
        if relaxation.feasible.all() and added == 0:
            break
        if added == 0:
            raise RuntimeError("network MOM: violated rows were found but none could be added "
                               f"(samples {np.flatnonzero(~relaxation.feasible)[:5].tolist()})")
        if shrink:
            # Rows without flow and without slack do not bind the restricted optimum: dropping
            # them leaves it optimal. A row is dropped at most once (one that comes back stays),
            # so the rounds cannot cycle.
            idle = working & (restricted.flows <= SHRINK_FLOW) & (restricted.S <= SHRINK_FLOW) & ~dropped
            working, dropped = working & ~idle, dropped | idle
        working = working | relaxation.add
    else:
        raise RuntimeError(f"network MOM: not optimal after {max_rounds} working-set rounds")
    potentials = feasible_potentials(C, restricted.S, data, relaxation.potentials)
    certificate = network_margin_certificate(restricted.Theta, potentials, restricted.flows, data, lam, orders)
    logger.log(_progress_level(started), "network MOM: optimal after %d rounds, %d working rows, certified relative gap %.1e",
               round_, working.sum(), certificate["relative_gap"])
    return SolverResult((restricted.Theta, potentials, restricted.flows), objective=certificate["objective"],
                        iterations=round_, status="optimal", path=f"network_working_set_{method}",
                        certificate=certificate, extra=dict(working_rows=int(working.sum()), history=history,
                                                             pilot=pilot_info))
