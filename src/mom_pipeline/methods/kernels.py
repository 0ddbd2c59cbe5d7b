"""Kernelized MOM: MOM on kernel features of the contexts (paper, appendix "Kernelization").

The paper replaces z by the T-dimensional feature (kappa(z, z_t))_{t=1}^T against the
training contexts (the empirical kernel map) and runs linear MOM on it, with

    polynomial  kappa(z, z') = (z'z / gamma + 1)^degree
    RBF         kappa(z, z') = exp(-||z - z'||^2 / gamma)   (rbf_norm="squared", the paper)
                kappa(z, z') = exp(-||z - z'|| / gamma)     (rbf_norm="unsquared", the released code).

With n_components set the features are bounded in size through scikit-learn's Nystroem:
feature_map="landmarks" (default) keeps the paper's empirical map but against the
n_components landmark contexts Nystroem samples, (kappa(z, s))_{s in landmarks}: with
n_components = T it is the full map up to a permutation of the columns, which leaves MOM
unchanged. feature_map="nystroem" uses Nystroem's own features K(z, S) K_SS^{-1/2} (inner
products approximate kappa itself: the regularizer becomes the RKHS norm, not the paper's).

normalize=True (default) divides the kernel by its largest value on the training contexts
(scale_; 1 for RBF, so RBF features are unchanged). Polynomial kernels reach (|z|^2/gamma + 1)^degree,
e.g. 6.7e6 for degree 4, gamma 0.1 and z in [0, 1]^5; MOM's lam then acts on a scale so
different from the data's that a QP solver cannot tell the regularizer from round-off
(lam / |features|^2 ~ 1e-18 at lam = 1e-4: Clarabel reports false infeasibility).
Normalized, lam keeps its meaning across degrees and gammas: it equals the paper's lam
times the squared scale (a reparametrization of the tuning grid, not another model).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.kernel_approximation import Nystroem
from sklearn.metrics.pairwise import euclidean_distances, polynomial_kernel, rbf_kernel

from ..blas_threads import one_blas_thread
from ..lp import StandardFormLP
from .base import (POSITIVE, POSITIVE_INT, CostModel, NotFittedError, StrOptions, check_features,
                   estimator_hyperparameters)
from .mom import MOM
from .mom_problem import operators_of_bases, optimality_margins, singular_values_and_rows

KERNELS = ("poly", "rbf")
RBF_NORMS = ("squared", "unsquared")
FEATURE_MAPS = ("landmarks", "nystroem")
#: The kernel's hyperparameters (`methods.base`'s declarative constraints), shared by the kernel
#: features, KernelMOM and the kernel ridge baseline. degree is read by the polynomial kernel only.
KERNEL_CONSTRAINTS = {"kernel": [StrOptions(set(KERNELS))], "degree": [POSITIVE_INT], "gamma": [POSITIVE],
                      "rbf_norm": [StrOptions(set(RBF_NORMS))]}


def check_rbf_norm(rbf_norm: str) -> None:
    """Raise a ValueError naming the choices unless rbf_norm is one of RBF_NORMS (shared by the
    kernel features and the kernel ridge)."""
    if rbf_norm not in RBF_NORMS:
        raise ValueError(f"unknown rbf_norm {rbf_norm!r}; choose one of {RBF_NORMS}")


def _unsquared_rbf(x, y, gamma: float = 1.0) -> float:
    """exp(-||x - y|| / gamma) for two vectors (the callable form Nystroem accepts)."""
    return float(np.exp(-np.linalg.norm(np.asarray(x) - np.asarray(y)) / gamma))


#: An RBF cell starts its path's working sets from the previous gamma's margins when its gamma
#: is at most this multiple of that gamma (see `KernelMOM.fit_many`).
RBF_NEIGHBOUR_GAMMA_RATIO = 2.0


def kernel_matrix(X, Y, kernel: str = "poly", degree: int = 2, gamma: float = 1.0,
                  rbf_norm: str = "squared") -> np.ndarray:
    """kappa(x_i, y_j) for rows of X (T, d) and Y (S, d): (T, S), in the paper's conventions."""
    if kernel == "poly":
        return polynomial_kernel(X, Y, degree=degree, gamma=1.0 / gamma, coef0=1.0)
    if rbf_norm == "squared":
        return rbf_kernel(X, Y, gamma=1.0 / gamma)
    return np.exp(-euclidean_distances(X, Y) / gamma)


@estimator_hyperparameters
class KernelFeatures(TransformerMixin, BaseEstimator):
    """Kernel features of contexts against the training contexts (or Nystroem landmarks).

    fit(Z) stores the reference contexts; transform(Z) returns (T, n_features_out_) with
    n_features_out_ = T_train, or n_components when set.
    """

    _parameter_constraints: ClassVar[dict] = {**KERNEL_CONSTRAINTS, "n_components": [None, POSITIVE_INT],
                                              "feature_map": [StrOptions(set(FEATURE_MAPS))]}

    kernel: str = "poly"
    degree: int = 2
    gamma: float = 1.0
    n_components: int | None = None
    random_state: int | None = 0
    rbf_norm: str = "squared"
    feature_map: str = "landmarks"
    normalize: bool = True

    def _kernel(self, X, Y) -> np.ndarray:
        return kernel_matrix(X, Y, self.kernel, int(self.degree), self.gamma, self.rbf_norm)

    def _nystroem(self) -> Nystroem:
        if self.kernel == "poly":
            return Nystroem(kernel="poly", degree=int(self.degree), gamma=1.0 / self.gamma, coef0=1.0,
                            n_components=int(self.n_components), random_state=self.random_state)
        if self.rbf_norm == "squared":
            return Nystroem(kernel="rbf", gamma=1.0 / self.gamma, n_components=int(self.n_components),
                            random_state=self.random_state)
        return Nystroem(kernel=_unsquared_rbf, kernel_params=dict(gamma=self.gamma),
                        n_components=int(self.n_components), random_state=self.random_state)

    def fit(self, Z, y=None):
        """Store the reference contexts Z (T, d) (all of them, or Nystroem's landmarks)."""
        Z = check_features(Z)
        if self.n_components is None:
            self.reference_ = Z.copy()
            self.nystroem_ = None
        else:
            if self.n_components > Z.shape[0]:
                raise ValueError(f"n_components = {self.n_components} exceeds the {Z.shape[0]} training samples")
            self.nystroem_ = self._nystroem().fit(Z)
            self.reference_ = np.asarray(self.nystroem_.components_)
        self.n_features_in_ = Z.shape[1]
        self.n_features_out_ = self.reference_.shape[0]
        self.scale_ = 1.0
        if self.normalize:
            largest = float(np.abs(self._kernel(Z, self.reference_)).max())
            self.scale_ = largest if largest > 0 else 1.0
        return self

    def transform(self, Z) -> np.ndarray:
        """Kernel features (T, n_features_out_) of contexts Z (T, d)."""
        if not hasattr(self, "reference_"):
            raise NotFittedError("KernelFeatures is not fitted yet; call fit first")
        Z = check_features(Z)
        if Z.shape[1] != self.n_features_in_:
            raise ValueError(f"Z has {Z.shape[1]} features but KernelFeatures was fitted with {self.n_features_in_}")
        if self.nystroem_ is not None and self.feature_map == "nystroem":
            return self.nystroem_.transform(Z) / np.sqrt(self.scale_)  # inner products ~ kernel / scale_
        return self._kernel(Z, self.reference_) / self.scale_


@estimator_hyperparameters
class KernelMOM(CostModel):
    """MOM on kernel features: c_hat = Theta phi(z), phi from `KernelFeatures`.

    coef_ is Theta (n, n_features) in kernel-feature space; predict_cost takes raw Z.
    The MOM problem is solved in the coordinates of the features' numerical row space
    (singular vectors of the training feature matrix with singular values above 1e-10 of
    the largest): an exact change of variables (||Theta||_F is invariant and the dropped
    directions carry no data), which shrinks the QP a lot for low-rank kernels (polynomial).
    """

    needs_costs = False
    _parameter_constraints: ClassVar[dict] = {**KernelFeatures._parameter_constraints, **MOM._parameter_constraints}
    # A tuning grid's chosen cell is refitted along the grid's lam path (`tuning._refit`):
    # fit_many warm-starts each lam from the previous one, where a cold fit is many times slower.
    # The path inserts its own intermediate lam values 10^0.5 apart (`policy.PATH_MAX_RATIO`).
    # RBF refits once asked for steps of 10^0.25 (eight trials' refits 33.2 -> 26.9 s); since the
    # working sets cap the broken rows that join a round, the coarser steps are faster: six refits
    # 21.5 -> 19.0 s, eight whole RBF tunings 1.05x (docs/decisions/010-regularization-paths.md).
    refit_path = "lam"

    kernel: str = "poly"
    degree: int = 2
    gamma: float = 1.0
    lam: float = 1e-2
    n_components: int | None = None
    solver: str = "fast"
    formulation: str = "basis"
    random_state: int | None = 0
    rbf_norm: str = "squared"
    feature_map: str = "landmarks"
    radius: float | None = None
    normalize: bool = True

    def _features(self) -> KernelFeatures:
        return KernelFeatures(kernel=self.kernel, degree=self.degree, gamma=self.gamma, n_components=self.n_components,
                              random_state=self.random_state, rbf_norm=self.rbf_norm, feature_map=self.feature_map,
                              normalize=self.normalize)

    def fit(self, Z, X_star=None, *, A=None, b=None, lp: StandardFormLP | None = None, basis=None, C=None):
        """Kernel features of Z (T, d), then MOM (see `MOM.fit`; C is ignored)."""
        return self.fit_many([self], Z, X_star, A=A, b=b, lp=lp, basis=basis)[0]

    @classmethod
    def fit_many(cls, models: list["KernelMOM"], Z, X_star=None, *, A=None, b=None, lp: StandardFormLP | None = None,
                 basis=None, C=None) -> list:
        """Fit several kernel MOMs on the same samples (a tuning grid); returns them.

        Models with the same kernel features (all hyperparameters but lam, solver, formulation
        and radius) share one kernel matrix and one row-space reduction, and their MOM
        problems go to `MOM.fit_many` together (one regularization path over lam). Every
        model ends at the exact optimum its own `fit` finds.
        """
        for model in models:  # every model checked before any is fitted
            model.validate_hyperparameters()
        Z = check_features(Z)
        groups: dict[tuple, list] = {}
        for model in models:
            key = tuple(sorted((k, repr(v)) for k, v in model._features().get_params().items()))
            groups.setdefault(key, []).append(model)
        # Cells that differ only in gamma start each lam's working set from the margins of the
        # previous such cell at that lam: the same rows, and close kernels have close active sets.
        # Polynomial kernels of any two gammas share their monomials (figure-4 cells over nine
        # lam: 4-8 s -> 0.4-0.9 s); RBF kernels only when gamma at most doubles (gammas 1..5 of
        # figure 4's grid: 45 s -> 18 s; from 0.1 to 0.5 the start made the cell 3.3x slower).
        neighbours: dict[tuple, tuple[float, dict]] = {}
        operators: dict = {}  # the reduced-cost operators of the samples, built once for every group
        for key, group in groups.items():
            neighbour = tuple(item for item in key if item[0] != "gamma")
            gamma, start = group[0].gamma, None
            if neighbour in neighbours:
                previous, margins = neighbours[neighbour]
                if group[0].kernel == "poly" or previous < gamma <= RBF_NEIGHBOUR_GAMMA_RATIO * previous:
                    start = margins
            # One BLAS thread: the SVD of a 375 x 375 kernel matrix takes 0.05 s on one thread and
            # 0.2-1.6 s on two when another process shares the cores (spin-waiting threads).
            with one_blas_thread():
                margins = cls._fit_group(group, Z, X_star, A, b, lp, basis, start, operators)
            neighbours[neighbour] = (gamma, margins)
        return models

    @staticmethod
    def _fit_group(group: list["KernelMOM"], Z, X_star, A, b, lp, basis, start_margins: dict | None = None,
                   operators: dict | None = None) -> dict:
        """Fit models sharing their kernel features: one kernel matrix, one reduction, one lam path.

        start_margins: None or {lam: (T*K,) optimality margins} of a neighbouring cell, the start
        of the path's working sets. Returns the margins of this group's optima by lam (for
        models on the path: exact solver, basis formulation, no ball). operators: a cache shared by
        the groups of one fit_many, holding the samples' reduced-cost operators once built."""
        features = group[0]._features().fit(Z)
        Phi = features.transform(Z)
        # Exact reduction to the row space of Phi: Phi = U S V', Theta = Theta_r V_r'.
        singular, Vt = singular_values_and_rows(Phi)
        keep = singular > 1e-10 * singular[0]
        row_space = Vt[keep].T  # (n_features, r)
        reduced = Phi @ row_space
        moms = [MOM(lam=m.lam, solver=m.solver, formulation=m.formulation, radius=m.radius) for m in group]
        on_path = [m.solver in ("auto", "fast") and m.formulation == "basis" and m.radius is None for m in group]
        starts = None if start_margins is None else [start_margins.get(m.lam) for m in group]
        MOM.fit_many(moms, reduced, X_star, A=A, b=b, lp=lp, basis=basis, start_margins=starts)
        margins = {}
        if any(on_path):
            operators = {} if operators is None else operators
            if "M" not in operators:
                operators["M"] = operators_of_bases(*MOM._bases(Z, X_star, A, b, lp, basis))
            margins = {mom.lam: optimality_margins(mom.coef_, operators["M"], reduced).ravel()
                       for mom, path in zip(moms, on_path) if path}
        for model, mom in zip(group, moms):
            model.features_, model.row_space_, model.mom_ = features, row_space, mom
            model.coef_ = mom.coef_ @ row_space.T
            model.objective_ = mom.objective_
            model.solver_info_ = dict(mom.solver_info_, feature_rank=int(keep.sum()))
            model.n_features_in_ = Z.shape[1]
        return margins

    def transform(self, Z) -> np.ndarray:
        """The kernel features of Z (T, n_features)."""
        self._check_fitted()
        return self.features_.transform(Z)

    def predict_cost(self, Z) -> np.ndarray:
        """c_hat = Theta phi(z) for every row of raw contexts Z (T, d): (T, n)."""
        return self.transform(Z) @ self.coef_.T
