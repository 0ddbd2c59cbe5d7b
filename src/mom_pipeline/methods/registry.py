"""The one registry of methods: the name an experiment's YAML gives (`estimator:`), the class,
whether training needs the true costs, and the label tables and figures show by default.

Everything that lists methods derives from here (the experiment configs' `estimator:` names,
the interface tests); tuning grids live only in the YAML parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import CostModel
from .baselines import OLS, KernelRidgeCost, RandomForest, Ridge, SPOPlus
from .cave import CaVE
from .dfl import DBB, PFYL
from .kernels import KernelMOM
from .mom import MOM
from .ftrl import FTRLMOM
from .online import OnlineMOM, Perceptron, SuboptimalityOGD
from .perturbed import AIMLE, DPO, IMLE, NID, PG
from .solution_pool import CMAP, NCE, ListwiseLTR, PairwiseLTR, PointwiseLTR


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


# Tables and figures show a method under its registered name unless it has a label of its own here.
_LABELS = {"OnlineMOM": "MOM-OGD", "FTRLMOM": "MOM-FTRL", "SuboptimalityOGD": "Suboptimality-OGD",
           "RandomForest": "RF", "SPOPlus": "SPO+",
           "IMLE": "I-MLE", "AIMLE": "AI-MLE"}
_CLASSES = {"MOM": MOM, "KernelMOM": KernelMOM, "OnlineMOM": OnlineMOM, "Perceptron": Perceptron,
            "FTRLMOM": FTRLMOM, "SuboptimalityOGD": SuboptimalityOGD, "OLS": OLS, "Ridge": Ridge,
            "RandomForest": RandomForest, "SPOPlus": SPOPlus, "KernelRidge": KernelRidgeCost, "PFYL": PFYL,
            "DBB": DBB, "CaVE": CaVE, "NCE": NCE, "PointwiseLTR": PointwiseLTR, "PairwiseLTR": PairwiseLTR,
            "ListwiseLTR": ListwiseLTR, "CMAP": CMAP, "DPO": DPO, "IMLE": IMLE, "AIMLE": AIMLE, "NID": NID,
            "PG": PG}
METHODS: dict[str, MethodEntry] = {
    name: MethodEntry(name, cls, _LABELS.get(name, name)) for name, cls in _CLASSES.items()
}


def method_entry(name: str) -> MethodEntry:
    """The registered method `name`; the error lists the registered names."""
    if name not in METHODS:
        raise UnknownMethodError(f"unknown estimator {name!r}; choose one of {sorted(METHODS)}")
    return METHODS[name]
