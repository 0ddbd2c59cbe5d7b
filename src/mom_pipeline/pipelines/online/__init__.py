"""The online experiment's stages after basis extraction: one pass per algorithm, report."""

from .pipeline import create_pipeline

__all__ = ["create_pipeline"]
