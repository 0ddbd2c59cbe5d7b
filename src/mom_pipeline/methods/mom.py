"""Maximum Optimality Margin (MOM), offline: learn c_hat = Theta z from observed optimal solutions.

The estimator. The problem (hinge rows, objective, certificate) is `mom_problem`; solving it
is `mom_solve.solve_mom(..., formulation=)`: the basis formulation by the exact working-set
method of `mom_pipeline.solvers` (or the cvxpy reference), the formulation without a basis
(`mom_dual_problem`) by `mom_dual`.
"""

from __future__ import annotations

import time
import warnings
from types import SimpleNamespace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

from ..lp import StandardFormLP
from .base import (N_JOBS, POSITIVE, LinearCostModel, StrOptions, check_features, check_samples,
                   estimator_hyperparameters, resolve_lp)
from .mom_dual import check_dual_formulation_fits, solve_dual_formulation, solve_dual_formulation_path, threads_of
from .mom_dual_problem import dual_formulation_objective
from .mom_problem import (SUPPORT_TOL, hinge_rows, mom_hinge_loss, mom_objective, operators_of_bases,
                          optimality_margins, support_mask)
from ..blas_threads import one_blas_thread
from ..solvers.network_margin import (incidence_network, network_samples, route_flows, route_order,
                                      solve_network_margin)
from ..solvers.policy import DualFormulationTooLarge
from .mom_solve import FORMULATIONS, SOLVERS, solve_hinge_qp, solve_hinge_qp_cvxpy, solve_mom, solve_mom_path

__all__ = ["MOM", "FORMULATIONS", "DegenerateFitWarning", "negligible_costs", "SOLVERS", "SUPPORT_TOL",
           "dual_formulation_objective", "hinge_rows", "mom_hinge_loss", "mom_objective", "optimality_margins", "solve_dual_formulation", "solve_hinge_qp",
           "solve_hinge_qp_cvxpy", "solve_mom", "support_mask"]

# Predicted costs no larger than this are zero to the LP solvers (HiGHS's optimality tolerances
# are 1e-7): every feasible basis is optimal for them and the decisions are arbitrary. MOM's
# margins are 1, so a fit's costs are about 1 / lam at large lam: the example's routes are still
# 70 % reproduced at lam = 1e7 (costs 3e-7), none at lam = 1e300 (costs 3e-300).
NEGLIGIBLE_COST = 1e-10


class DegenerateFitWarning(UserWarning):
    """A MOM fit whose predicted costs are zero to round-off (lam far too large)."""


def negligible_costs(coef, Z) -> float | None:
    """The largest predicted cost |Theta z| over the rows of Z when it is at most
    NEGLIGIBLE_COST (the decisions of such a fit are arbitrary), else None."""
    largest = float(np.abs(np.asarray(Z, dtype=float) @ np.asarray(coef, dtype=float).T).max(initial=0.0))
    return largest if largest <= NEGLIGIBLE_COST else None


def _refuse_zero_features(Z: np.ndarray) -> None:
    """Every prediction Theta z of an all-zero feature matrix is 0 whatever Theta: refused."""
    if Z.size and not Z.any():
        raise ValueError(f"MOM: every feature of Z is zero (all {Z.shape[1]} columns on the {Z.shape[0]} samples): "
                         "Theta z = 0 for any Theta, so there is nothing to learn; pass the features (and a "
                         "constant column for an intercept)")


def _warn_if_degenerate(model: "MOM", Z: np.ndarray) -> None:
    largest = negligible_costs(model.coef_, Z)
    if largest is not None:
        warnings.warn(f"MOM(lam={model.lam:g}): the fitted Theta is zero to round-off (largest predicted cost "
                      f"{largest:.3g} on the training samples, at most {NEGLIGIBLE_COST:g}): its decisions are "
                      "arbitrary; choose a smaller lam", DegenerateFitWarning, stacklevel=3)


def _check_solutions(X_star, T: int, n: int) -> np.ndarray:
    return check_samples("X_star", X_star, T, n)


@estimator_hyperparameters
class MOM(LinearCostModel):
    """Maximum Optimality Margin: c_hat = Theta z learned from observed optimal solutions.

    Hyperparameters:
        lam: regularization weight (> 0); the objective is (lam/2)||Theta||^2 + mean hinge.
        solver: "auto" (the exact working-set method, its linear algebra chosen by problem
            shape: `solvers.policy`; "fast" is an alias), "cvxpy" (vectorized reference) or,
            with formulation="dual" on a node-arc incidence matrix A and routes X_star,
            "network" (the working set over arcs of `solvers.network_margin`: memory grows with
            the working rows, not with the arcs squared). "auto" takes the network method for
            such a fit only when the block method would not fit in memory: on the grids
            measured the block method is faster (docs/solvers.md).
        formulation: "basis" (the paper: hinge on the reduced costs of the observed basis)
            or "dual" (no basis: free duals, zero reduced cost on supp(x*)).
        radius: None or the radius of the ball ||Theta||_F <= radius (the set K of the paper).
        tol: margin tolerance of the working-set method's termination test.
        n_jobs: threads of the dual formulation's block method (None: 1; -1: every core this
            process may use), at most: a problem too small to share runs on fewer
            (`solvers.policy.block_ipm_threads`); the result does not depend on it. The basis
            formulation's working sets are too small to share out and ignore it.

    Learned: coef_ (n, d), objective_ (optimal training objective), solver_info_ (dict),
    n_iter_ (working-set rounds; 1 for Clarabel on the whole problem), n_features_in_; with
    formulation="dual" also dual_ (T, m) the duals y and flows_ (T, n) the dual flows of the
    block method (None after Clarabel): `mom_dual_problem.dual_formulation_certificate` checks both.
    """

    needs_costs: ClassVar[bool] = False
    _parameter_constraints: ClassVar[dict] = {
        "lam": [POSITIVE],
        "solver": [StrOptions(set(SOLVERS) | {"network"})],
        "formulation": [StrOptions(set(FORMULATIONS))],
        "radius": [None, POSITIVE],
        "tol": [POSITIVE],
        "n_jobs": N_JOBS,
    }

    lam: float = 1e-2
    solver: str = "auto"
    formulation: str = "basis"
    radius: float | None = None
    tol: float = 1e-8
    n_jobs: int | None = None

    def fit(self, Z, X_star=None, *, A=None, b=None, lp: StandardFormLP | None = None, basis=None, C=None):
        """Fit from features Z (T, d) and observed optimal solutions X_star (T, n) or bases (T, m).

        C is ignored (MOM never needs the costs); it is accepted so that pipelines can pass it
        to every method alike. With formulation="basis" and basis=None the bases come from
        x* alone (`lp.basis_from_solution`); pass the solver's bases to use those instead.
        """
        threads = threads_of(self.n_jobs)
        Z = check_features(Z)
        _refuse_zero_features(Z)
        T = Z.shape[0]
        start = time.perf_counter()
        if self.formulation == "dual":
            if X_star is None:
                raise ValueError("formulation='dual' needs the observed optimal solutions X_star")
            problem = resolve_lp(A, b, lp)
            X = _check_solutions(X_star, T, problem.n)
            if problem.A.ndim == 3 and problem.A.shape[0] != T:
                raise ValueError(f"the LP has {problem.A.shape[0]} samples but Z has {T}")
            network = self._network_problem(problem, X, Z, threads)
            if network is not None:
                Theta, y, info = _fit_network(network, self.lam, problem.A.shape[0])
                self._set_fitted(Theta, dual_formulation_objective(Theta, y, problem.A, X, Z, self.lam), info,
                                 time.perf_counter() - start, Z, dual=(y, info.pop("flows")))
                return self
            # Any basis containing the supports parametrizes the same problem (`mom_dual_problem`).
            Theta, info = solve_mom(None, Z, self.lam, self.radius, self.solver, self.tol, A=problem.A,
                                    formulation="dual", basis=problem.basis_from_solution(X), X=X, threads=threads)
            y = info.pop("duals")
            self._set_fitted(Theta, dual_formulation_objective(Theta, y, problem.A, X, Z, self.lam), info,
                             time.perf_counter() - start, Z, dual=(y, info.pop("flows", None)))
        else:
            constraint_matrix, basis = self._bases(Z, X_star, A, b, lp, basis)
            M = operators_of_bases(constraint_matrix, basis)
            Theta, info = solve_mom(M, Z, self.lam, self.radius, self.solver, self.tol, A=constraint_matrix)
            self._set_fitted(Theta, mom_objective(Theta, M, Z, self.lam), info, time.perf_counter() - start, Z)
        return self

    def fit_standardized(self, Z, X_star, *, lp: StandardFormLP, basis=None) -> MOM:
        """`fit` on standardized features, coef_ then in the user's units and the scaling kept
        as ``feature_scaling_`` (`cost_free_tuning.fit_standardized`, as the inverse pipeline fits)."""
        from .cost_free_tuning import fit_standardized

        return fit_standardized(self, Z, X_star, lp, basis=basis)

    @classmethod
    def tuned_from_decisions(cls, params: dict, lambdas, Z, X_star, lp: StandardFormLP, *, n_folds: int,
                             seed: int) -> tuple[MOM, pd.DataFrame]:
        """(the model at the lam chosen from the observed decisions alone, refitted on every
        sample; the validation curve that chose it): `cost_free_tuning.validation_curve`, the
        inverse pipeline's choice (K seeded folds, the highest share of held-out x* reproduced,
        ties to the lower held-out hinge). The fits standardize the features, so does the refit."""
        from .cost_free_tuning import validation_curve

        curve = validation_curve(params, Z, X_star, lp, lambdas, n_folds=n_folds, seed=seed)
        lam = float(curve.loc[curve["chosen"], "lam"].iloc[0])
        return cls(**{**params, "lam": lam}).fit_standardized(Z, X_star, lp=lp), curve

    def fits_by_network(self, A, X_star, Z) -> bool:
        """Whether `fit(Z, X_star, A=A)` goes to the network method (`_network_problem`):
        a pipeline asks before refusing a problem the block method has no memory for."""
        if self.formulation != "dual":
            return False
        A = np.asarray(A.toarray() if hasattr(A, "toarray") else A, dtype=float)
        X = _check_solutions(X_star, len(Z), A.shape[-1])
        return self._network_problem(SimpleNamespace(A=A), X, np.asarray(Z, dtype=float),
                                     threads_of(self.n_jobs)) is not None

    def _network_problem(self, problem, X, Z, threads: int):
        """The `network_margin.NetworkSamples` of a dual-formulation fit that the network method
        solves, or None for the block method: with solver="network" on a node-arc incidence
        matrix (else an error), with "auto" when the LP is one, the observed solutions are routes
        and the block method would not fit in memory (`policy.check_dual_formulation_memory`)."""
        if self.solver not in ("auto", "fast", "network") or problem.A.ndim != 2 or self.radius is not None:
            if self.solver == "network":
                raise ValueError("solver='network' needs one node-arc incidence matrix A shared by every sample "
                                 "and no radius")
            return None
        shape = incidence_network(problem.A)
        samples = None
        if shape is not None:
            try:
                samples = network_samples(*shape, X, Z)
            except ValueError as error:
                if self.solver == "network":
                    raise ValueError(f"solver='network': {error}") from error
        if self.solver == "network":
            if samples is None:
                raise ValueError("solver='network' needs A to be a node-arc incidence matrix (one +1 and one -1 "
                                 "per column, at most one node's row dropped)")
            return samples
        if samples is None:
            return None
        try:
            check_dual_formulation_fits(problem.A, X, Z.shape[1], self.n_jobs)
        except DualFormulationTooLarge:
            return samples
        return None

    def _set_fitted(self, Theta, objective: float, info: dict, seconds: float, Z, dual=None) -> None:
        """The one place where a MOM fit's learned state is set (by `fit`, and by `fit_many` for
        each model of a shared path), and the degenerate-fit warning given. dual: (y, flows) of a
        dual-formulation fit (the block method's flows, None after Clarabel: the input of
        `mom_dual_problem.dual_formulation_certificate`)."""
        self.coef_ = Theta
        self.objective_ = objective
        self.n_iter_ = int(info.get("iterations", 1))
        self.solver_info_ = dict(info, seconds=seconds)
        self.n_features_in_ = Z.shape[1]
        if dual is not None:
            self.dual_, self.flows_ = dual
        _warn_if_degenerate(self, Z)

    @classmethod
    def fit_many(cls, models: list["MOM"], Z, X_star=None, *, A=None, b=None, lp: StandardFormLP | None = None,
                 basis=None, C=None, start_margins: list | None = None) -> list:
        """Fit several MOM models on the same samples (a tuning grid over lam); returns them.

        Models with the exact solver, the basis formulation and no ball that differ only in
        lam share one set of reduced-cost operators and are solved as one regularization
        path (`mom_solve.solve_mom_path`); each ends at the exact optimum its own `fit`
        finds. start_margins (aligned with models: None or the (T*K,) optimality margins of a
        related fit on the same samples, e.g. a neighbouring kernel cell) start the path's
        working sets; they change how fast, not where, it ends. Dual-formulation models with
        the exact solver and no ball share one block
        problem, solved from the largest lam down with warm starts. The others are fitted one
        by one.
        """
        groups: dict[float, list] = {}
        dual_path = []
        for model in models:  # every model checked before any is fitted
            model.validate_hyperparameters()
        for model in models:
            if model.solver in ("auto", "fast") and model.radius is None:
                if model.formulation == "dual":
                    dual_path.append(model)
                else:
                    groups.setdefault(float(model.tol), []).append(model)
            else:
                model.fit(Z, X_star, A=A, b=b, lp=lp, basis=basis, C=C)
        Z = check_features(Z)
        _refuse_zero_features(Z)
        if dual_path:
            cls._fit_dual_path(dual_path, Z, X_star, A, b, lp)
        if not groups:
            return models
        constraint_matrix, bases = cls._bases(Z, X_star, A, b, lp, basis)
        M = operators_of_bases(constraint_matrix, bases)
        if start_margins is not None and len(start_margins) != len(models):
            raise ValueError(f"start_margins has {len(start_margins)} entries for {len(models)} models")
        starts = {id(model): margins for model, margins in zip(models, start_margins or [None] * len(models))}
        for tol, group in groups.items():
            start = time.perf_counter()
            path = solve_mom_path(M, Z, [model.lam for model in group], tol,
                                  [starts[id(model)] for model in group] if start_margins is not None else None,
                                  A=constraint_matrix)
            seconds = (time.perf_counter() - start) / len(group)
            for model, (Theta, info) in zip(group, path):
                model._set_fitted(Theta, mom_objective(Theta, M, Z, model.lam), info, seconds, Z)
        return models

    @staticmethod
    def _fit_dual_path(models: list["MOM"], Z, X_star, A, b, lp) -> None:
        """Dual-formulation models differing only in lam: one block problem, solved from the
        largest lam down with warm starts (`mom_dual.solve_dual_formulation_path`); those the
        network method takes (`_network_problem`), fitted one by one."""
        if X_star is None:
            raise ValueError("formulation='dual' needs the observed optimal solutions X_star")
        problem = resolve_lp(A, b, lp)
        X = _check_solutions(X_star, Z.shape[0], problem.n)
        # Models the network method fits (a route LP too large for the block method) are fitted
        # one by one that way: the block path would only stop at the memory check.
        by_network = [model for model in models
                      if model._network_problem(problem, X, Z, threads_of(model.n_jobs)) is not None]
        for model in by_network:
            model.fit(Z, X_star, A=A, b=b, lp=lp)
        models = [model for model in models if model not in by_network]
        if not models:
            return
        start = time.perf_counter()
        path = solve_dual_formulation_path(problem.A, problem.basis_from_solution(X), X, Z,
                                           [model.lam for model in models],
                                           threads=max(threads_of(model.n_jobs) for model in models))
        seconds = (time.perf_counter() - start) / len(models)
        for model, (Theta, y, info) in zip(models, path):
            model._set_fitted(Theta, dual_formulation_objective(Theta, y, problem.A, X, Z, model.lam), info, seconds,
                              Z, dual=(y, info.pop("flows", None)))

    @staticmethod
    def _bases(Z, X_star, A, b, lp, basis):
        """The constraint matrix and the (T, m) bases of the training samples."""
        T = Z.shape[0]
        if basis is None:
            if X_star is None:
                raise ValueError("MOM needs the observed optimal solutions X_star (or their bases via basis=)")
            problem = resolve_lp(A, b, lp)
            return problem.A, problem.basis_from_solution(_check_solutions(X_star, T, problem.n))
        if lp is not None:
            constraint_matrix = lp.A
        elif A is not None:
            constraint_matrix = np.asarray(A, dtype=float)
        else:
            raise ValueError("the constraints are needed: pass lp=StandardFormLP or A=...")
        basis = np.asarray(basis)
        m = constraint_matrix.shape[-2]
        if basis.shape != (T, m):
            raise ValueError(f"basis must be ({T}, {m}) (one basis of m = {m} columns per sample); got {basis.shape}")
        if not np.issubdtype(basis.dtype, np.integer):
            raise ValueError(f"basis must hold integer column indices; got dtype {basis.dtype}")
        return constraint_matrix, basis


def _fit_network(samples, lam: float, m: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """(Theta (n, d), duals y (T, m) of the m rows of A, info with the flows (T, n)) of the
    network method (`solvers.network_margin`) on a node-arc incidence LP: y are the potentials
    negated (A'y = y[head] - y[tail] with -1 at the tail) and shifted to 0 on a dropped row's
    node; the flows are the circulation on every column divided by T (the dense method's units)."""
    with one_blas_thread():
        result = solve_network_margin(samples, lam)
    Theta, potentials, row_flows = result.solution
    if samples.n_nodes > m:  # the dropped row's node is the last one
        potentials = potentials - potentials[:, m:m + 1]
    circulation, _ = route_flows(np.where(samples.rows, row_flows, 0.0), samples, route_order(samples))
    info = dict(result.info(), flows=circulation / samples.T)
    return Theta, -potentials[:, :m], info
