"""Kedro glue only: stage pipelines and the per-figure namespaced experiment instances."""
