"""Stage 2: solve the trials' LPs once and extract the training bases."""

from .pipeline import create_pipeline

__all__ = ["create_pipeline"]
