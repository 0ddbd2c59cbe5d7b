"""Methods: MOM (offline, kernelized, online) and the predict-then-optimize baselines.

Every method is a scikit-learn-style estimator (`CostModel`): hyperparameters in
``__init__``, learned state with a trailing underscore, ``fit`` returns self,
``predict_cost(Z)`` gives costs and ``decide(Z, lp)`` solves the LPs with them.

Training needs only the observed optimal solutions X* (inverse LP works) for
MOM, KernelMOM, OnlineMOM, Perceptron, FTRLMOM and SuboptimalityOGD; it needs the true
costs C for OLS, Ridge, RandomForest, SPOPlus and the kernel ridges (``needs_costs``).
`registry.METHODS` is the one list of methods.
"""

from .base import CostModel, LinearCostModel, MissingCostsError, NotFittedError, check_features, resolve_lp
from .baselines import OLS, KernelRidgeCost, RandomForest, Ridge, SPOPlus
from .kernels import KernelFeatures, KernelMOM
from .mom import MOM
from .ftrl import FTRLMOM
from .online import OnlineMOM, Perceptron, SuboptimalityOGD
from .registry import METHODS, MethodEntry, method_entry
from .tuning import TuningResult, grid_search, validation_split

__all__ = [
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
    "MissingCostsError",
    "NotFittedError",
    "OnlineMOM",
    "Perceptron",
    "RandomForest",
    "Ridge",
    "SPOPlus",
    "SuboptimalityOGD",
    "TuningResult",
    "check_features",
    "grid_search",
    "method_entry",
    "resolve_lp",
    "validation_split",
]
