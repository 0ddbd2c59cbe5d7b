"""One paper figure's experiment: data, bases, training, evaluation, reporting (or the online pass)."""

from .pipeline import create_pipeline, data_pipeline, online_pipeline

__all__ = ["create_pipeline", "data_pipeline", "online_pipeline"]
