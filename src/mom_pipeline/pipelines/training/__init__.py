"""Stage 3: tune and fit every configured method on every trial."""

from .pipeline import create_pipeline

__all__ = ["create_pipeline"]
