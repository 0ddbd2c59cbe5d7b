"""Inverse LP on the user's own tables: validate -> train MOM -> prescribe; and the example."""

from .pipeline import create_pipeline, example_pipeline, prescribe_pipeline

__all__ = ["create_pipeline", "example_pipeline", "prescribe_pipeline"]
