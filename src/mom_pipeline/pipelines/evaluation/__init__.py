"""Stage 4: decisions of the fitted methods on the test LPs, one row per test sample."""

from .pipeline import create_pipeline

__all__ = ["create_pipeline"]
