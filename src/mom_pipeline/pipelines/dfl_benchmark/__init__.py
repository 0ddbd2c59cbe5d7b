"""The decision-focused learning benchmark: per problem, one experiment per (noise level,
training size), then a report per noise level."""

from .pipeline import CELLS, NOISE_LEVELS, PROBLEMS, SIZES, create_pipeline, problem_cells

__all__ = ["CELLS", "NOISE_LEVELS", "PROBLEMS", "SIZES", "create_pipeline", "problem_cells"]
