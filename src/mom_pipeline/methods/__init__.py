"""Methods: MOM (offline, kernelized, online) and the predict-then-optimize baselines.

Every method is a scikit-learn-style estimator (`CostModel`): hyperparameters in
``__init__`` (their constraints in ``_parameter_constraints``, checked when ``fit`` starts),
learned state with a trailing underscore, ``fit`` returns self, ``predict_cost(Z)`` (or
``predict(Z)``, scikit-learn's name) gives costs and ``decide(Z, lp)`` solves the LPs with them.

Training needs only the observed optimal solutions X* (inverse LP works) for
MOM, KernelMOM, OnlineMOM, Perceptron, FTRLMOM, SuboptimalityOGD, the cone-aligned CaVE, the contrastive NCE and CMAP and the perturbed optimizer DPO; it needs the true
costs C for OLS, Ridge, RandomForest, SPOPlus, the kernel ridges and the decision-focused
PFYL and DBB, the learning-to-rank losses and the perturbed I-MLE, AI-MLE, NID and PG (``needs_costs``). `registry.METHODS` is the one list of methods.
"""

from .base import CostModel, LinearCostModel, MissingCostsError, NotFittedError, check_features, resolve_lp
from .baselines import OLS, KernelRidgeCost, RandomForest, Ridge, SPOPlus
from .cave import CaVE
from .dfl import DBB, PFYL, SPOPlusAdam
from .kernels import KernelFeatures, KernelMOM
from .mom import MOM
from .ftrl import FTRLMOM
from .online import OnlineMOM, Perceptron, SuboptimalityOGD
from .perturbed import AIMLE, DPO, IMLE, NID, PG
from .solution_pool import CMAP, NCE, ListwiseLTR, PairwiseLTR, PointwiseLTR
from .registry import METHODS, MethodEntry, method_entry
from .tuning import TuningResult, grid_search, validation_split

__all__ = [
    "AIMLE",
    "CMAP",
    "DPO",
    "IMLE",
    "NID",
    "PG",
    "CaVE",
    "DBB",
    "PFYL",
    "FTRLMOM",
    "MOM",
    "METHODS",
    "MethodEntry",
    "OLS",
    "CostModel",
    "KernelFeatures",
    "KernelMOM",
    "KernelRidgeCost",
    "LinearCostModel",
    "ListwiseLTR",
    "MissingCostsError",
    "NCE",
    "NotFittedError",
    "OnlineMOM",
    "PairwiseLTR",
    "Perceptron",
    "PointwiseLTR",
    "RandomForest",
    "Ridge",
    "SPOPlus",
    "SPOPlusAdam",
    "SuboptimalityOGD",
    "TuningResult",
    "check_features",
    "grid_search",
    "method_entry",
    "resolve_lp",
    "validation_split",
]
