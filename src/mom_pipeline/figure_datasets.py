"""The figures' datasets (PNG through matplotlib, JSON through plotly) with saves that are
whole or nothing (`mom_pipeline.datasets.SaveWholeOrNothing`). Apart from
`mom_pipeline.datasets` so that loading a table does not import matplotlib and plotly."""

from kedro_datasets.matplotlib import MatplotlibDataset
from kedro_datasets.plotly import JSONDataset

from mom_pipeline.datasets import DamagedVersionNamed, SaveWholeOrNothing


class AtomicMatplotlibDataset(SaveWholeOrNothing, MatplotlibDataset):
    """matplotlib.MatplotlibDataset (write only) whose saves are whole or nothing."""


class AtomicPlotlyJSONDataset(DamagedVersionNamed, SaveWholeOrNothing, JSONDataset):
    """plotly.JSONDataset whose saves are whole or nothing."""
