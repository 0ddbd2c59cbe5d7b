"""Stage 5: summary tables (markdown, CSV) and the paper-style figure (PNG, plotly JSON)."""

from .pipeline import create_pipeline

__all__ = ["create_pipeline"]
