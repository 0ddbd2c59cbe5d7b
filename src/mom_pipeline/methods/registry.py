"""The one registry of methods: the name an experiment's YAML gives (`estimator:`), the class,
whether training needs the true costs, and the label tables and figures show by default.

Everything that lists methods derives from here (the experiment configs' `estimator:` names,
the interface tests); tuning grids live only in the YAML parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import CostModel
from .baselines import OLS, KernelRidgeCost, RandomForest, Ridge, SPOPlus
from .kernels import KernelMOM
from .mom import MOM
from .ftrl import FTRLMOM
from .online import OnlineMOM, Perceptron, SuboptimalityOGD


class UnknownMethodError(ValueError):
    """A configuration names a method that is not registered."""


@dataclass(frozen=True)
class MethodEntry:
    """A registered method."""

    name: str  # as written in a config's `estimator:`
    cls: type[CostModel]
    label: str  # the default label in tables and figures

    @property
    def needs_costs(self) -> bool:
        """True when training needs the true costs C (predict-then-optimize baselines)."""
        return bool(self.cls.needs_costs)


METHODS: dict[str, MethodEntry] = {entry.name: entry for entry in (
    MethodEntry("MOM", MOM, "MOM"),
    MethodEntry("KernelMOM", KernelMOM, "KernelMOM"),
    MethodEntry("OnlineMOM", OnlineMOM, "MOM-OGD"),
    MethodEntry("Perceptron", Perceptron, "Perceptron"),
    MethodEntry("FTRLMOM", FTRLMOM, "MOM-FTRL"),
    MethodEntry("SuboptimalityOGD", SuboptimalityOGD, "Suboptimality-OGD"),
    MethodEntry("OLS", OLS, "OLS"),
    MethodEntry("Ridge", Ridge, "Ridge"),
    MethodEntry("RandomForest", RandomForest, "RF"),
    MethodEntry("SPOPlus", SPOPlus, "SPO+"),
    MethodEntry("KernelRidge", KernelRidgeCost, "KernelRidge"),
)}


def method_entry(name: str) -> MethodEntry:
    """The registered method `name`; the error lists the registered names."""
    if name not in METHODS:
        raise UnknownMethodError(f"unknown estimator {name!r}; choose one of {sorted(METHODS)}")
    return METHODS[name]
