"""Methods: MOM (offline, kernelized, online) and the predict-then-optimize baselines."""

from .base import CostModel, MissingCostsError, NotFittedError, check_features, resolve_lp

__all__ = ["CostModel", "MissingCostsError", "NotFittedError", "check_features", "resolve_lp"]
