"""mom_pipeline: Maximum Optimality Margin for contextual and inverse linear programming."""

__version__ = "0.1.0"
