"""Inverse LP on the user's own data: tables -> validated standard-form problems -> MOM.

No Kedro here: the pipelines `inverse` and `prescribe` wrap these functions. The table
layout is documented in `mom_pipeline.inverse.schema`.
"""

from .example import make_example_dataset
from .prescription import prescribe
from .presolve import drop_implied_constraints
from .schema import InverseInputError, InverseProblem
from .standard_form import (
    OriginalConstraints,
    StandardFormError,
    StandardFormMap,
    to_standard_form,
    to_standard_form_batch,
)
from .validation import load_inverse_problem, validate_inverse_problem
from .writing import constraints_to_tables, write_example_tables

__all__ = [
    "InverseInputError",
    "InverseProblem",
    "OriginalConstraints",
    "StandardFormError",
    "StandardFormMap",
    "constraints_to_tables",
    "drop_implied_constraints",
    "load_inverse_problem",
    "make_example_dataset",
    "prescribe",
    "to_standard_form",
    "to_standard_form_batch",
    "validate_inverse_problem",
    "write_example_tables",
]
