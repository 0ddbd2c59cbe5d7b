"""Inverse route choice: a road network and observed routes -> RouteMOM -> arc costs, routes for new contexts."""

from .pipeline import create_pipeline, example_pipeline

__all__ = ["create_pipeline", "example_pipeline"]
