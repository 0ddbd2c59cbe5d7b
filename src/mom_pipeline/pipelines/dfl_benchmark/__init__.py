"""The decision-focused learning benchmark: one experiment per (noise level, training size),
then a report per noise level."""

from .pipeline import CELLS, NOISE_LEVELS, SIZES, create_pipeline

__all__ = ["CELLS", "NOISE_LEVELS", "SIZES", "create_pipeline"]
