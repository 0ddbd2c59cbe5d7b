"""Methods: MOM (offline, kernelized, online) and the predict-then-optimize baselines.

Every method is a scikit-learn-style estimator (`CostModel`): hyperparameters in
``__init__``, learned state with a trailing underscore, ``fit`` returns self,
``predict_cost(Z)`` gives costs and ``decide(Z, lp)`` solves the LPs with them.

Training needs only the observed optimal solutions X* (inverse LP works) for
MOM, KernelMOM, OnlineMOM, Perceptron, FTRLMOM and SuboptimalityOGD; it needs the true
costs C for OLS, Ridge, RandomForest, SPOPlus, the kernel ridges and the decision-focused
PFYL and DBB (``needs_costs``).
"""

from .base import CostModel, LinearCostModel, MissingCostsError, NotFittedError, check_features, resolve_lp
from .baselines import OLS, KernelRidgeCost, PolyKernelRidge, RandomForest, RbfKernelRidge, Ridge, SPOPlus
from .dfl import DBB, PFYL
from .kernels import KernelFeatures, KernelMOM
from .mom import MOM
from .online import FTRLMOM, OnlineMOM, Perceptron, SuboptimalityOGD
from .tuning import TuningResult, grid_search, validation_split

NEEDS_ONLY_X_STAR = ("MOM", "KernelMOM", "OnlineMOM", "Perceptron", "FTRLMOM", "SuboptimalityOGD")
NEEDS_COSTS = ("OLS", "Ridge", "RandomForest", "SPOPlus", "KernelRidgeCost", "PolyKernelRidge", "RbfKernelRidge",
               "PFYL", "DBB")

__all__ = [
    "DBB",
    "PFYL",
    "FTRLMOM",
    "MOM",
    "NEEDS_COSTS",
    "NEEDS_ONLY_X_STAR",
    "OLS",
    "CostModel",
    "KernelFeatures",
    "KernelMOM",
    "KernelRidgeCost",
    "LinearCostModel",
    "MissingCostsError",
    "NotFittedError",
    "OnlineMOM",
    "Perceptron",
    "PolyKernelRidge",
    "RandomForest",
    "RbfKernelRidge",
    "Ridge",
    "SPOPlus",
    "SuboptimalityOGD",
    "TuningResult",
    "check_features",
    "grid_search",
    "resolve_lp",
    "validation_split",
]
