"""Stage 1: generate an experiment's trials (train and test samples, ground truth)."""

from .pipeline import create_pipeline

__all__ = ["create_pipeline"]
