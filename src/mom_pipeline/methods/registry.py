"""The one registry of methods: the name an experiment's YAML gives (`estimator:`), the class,
whether training needs the true costs, the label tables and figures show by default, and the
family a method belongs to (the DFL benchmark's family figure draws one line per family).

Everything that lists methods derives from here (the experiment configs' `estimator:` names,
the interface tests); tuning grids live only in the YAML parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import CostModel
from .baselines import OLS, KernelRidgeCost, RandomForest, Ridge, SPOPlus
from .cave import CaVE
from .dfl import DBB, PFYL, SPOPlusAdam
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
    family: str  # one of FAMILIES (MOM run from x* alone is "MOM x*": see method_family)

    @property
    def needs_costs(self) -> bool:
        """True when training needs the true costs C (predict-then-optimize baselines)."""
        return bool(self.cls.needs_costs)


# Tables and figures show a method under its registered name unless it has a label of its own here.
_LABELS = {"OnlineMOM": "MOM-OGD", "FTRLMOM": "MOM-FTRL", "SuboptimalityOGD": "Suboptimality-OGD",
           "RandomForest": "RF", "SPOPlus": "SPO+", "SPOPlusAdam": "SPO+ (Adam)",
           "IMLE": "I-MLE", "AIMLE": "AI-MLE"}
_CLASSES = {"MOM": MOM, "KernelMOM": KernelMOM, "OnlineMOM": OnlineMOM, "Perceptron": Perceptron,
            "FTRLMOM": FTRLMOM, "SuboptimalityOGD": SuboptimalityOGD, "OLS": OLS, "Ridge": Ridge,
            "RandomForest": RandomForest, "SPOPlus": SPOPlus, "SPOPlusAdam": SPOPlusAdam, "KernelRidge": KernelRidgeCost,
            "PFYL": PFYL,
            "DBB": DBB, "CaVE": CaVE, "NCE": NCE, "PointwiseLTR": PointwiseLTR, "PairwiseLTR": PairwiseLTR,
            "ListwiseLTR": ListwiseLTR, "CMAP": CMAP, "DPO": DPO, "IMLE": IMLE, "AIMLE": AIMLE, "NID": NID,
            "PG": PG}
#: The families, in the order figures draw them, grouped by what a method's loss compares:
#: predicted costs with c (two-stage); the decision's regret through a surrogate or an
#: approximate gradient (SPO+, DBB, NID, PG); the decisions of randomly perturbed costs
#: (PFYL, DPO, I-MLE, AI-MLE); x* against a pool of earlier solutions (NCE, CMAP, the three
#: learning-to-rank losses); the cone of x*'s binding constraints (CaVE and its variants);
#: MOM with the optimal bases; MOM from the observed decisions alone (dual formulation); the
#: online methods of figure 5.
FAMILIES = ("two-stage", "regret-based", "perturbed", "solution pool", "cone-aligned", "MOM", "MOM x*", "online")
_FAMILIES = {"OLS": "two-stage", "Ridge": "two-stage", "RandomForest": "two-stage", "KernelRidge": "two-stage",
             "SPOPlus": "regret-based", "SPOPlusAdam": "regret-based", "DBB": "regret-based", "NID": "regret-based",
             "PG": "regret-based",
             "PFYL": "perturbed", "DPO": "perturbed", "IMLE": "perturbed", "AIMLE": "perturbed",
             "NCE": "solution pool", "CMAP": "solution pool", "PointwiseLTR": "solution pool",
             "PairwiseLTR": "solution pool", "ListwiseLTR": "solution pool", "CaVE": "cone-aligned",
             "MOM": "MOM", "KernelMOM": "MOM", "OnlineMOM": "online", "FTRLMOM": "online", "Perceptron": "online",
             "SuboptimalityOGD": "online"}
METHODS: dict[str, MethodEntry] = {
    name: MethodEntry(name, cls, _LABELS.get(name, name), _FAMILIES[name]) for name, cls in _CLASSES.items()
}


def method_family(estimator: str, x_star_only: bool = False) -> str:
    """The family of a configured method: its estimator's, except that MOM (or kernel MOM)
    trained from x* alone, without the optimal bases, is the family "MOM x*"."""
    family = method_entry(estimator).family
    return "MOM x*" if family == "MOM" and x_star_only else family


def method_entry(name: str) -> MethodEntry:
    """The registered method `name`; the error lists the registered names."""
    if name not in METHODS:
        raise UnknownMethodError(f"unknown estimator {name!r}; choose one of {sorted(METHODS)}")
    return METHODS[name]
