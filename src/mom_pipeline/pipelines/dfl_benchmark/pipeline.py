"""DFL benchmark reports: the trial summaries of every training size -> one table and one
figure per noise level (namespace ``dfl_benchmark.<noise level>``).

The experiments themselves are the usual template under ``dfl_benchmark.<noise>_<size>``
(composed in the pipeline registry); their settings are in parameters_dfl_benchmark.yml.
"""

from kedro.pipeline import Node, Pipeline

from .nodes import report_noise_level

NOISE_LEVELS = ("noise0", "noise05")
SIZES = ("n100", "n1000", "n5000")
CELLS = tuple(f"{noise}_{size}" for noise in NOISE_LEVELS for size in SIZES)


def _report(noise: str) -> Pipeline:
    """The report of one noise level; its inputs are the experiments of its sizes."""
    inputs, datasets, parameters = [], {}, {}
    for size in SIZES:
        cell = f"dfl_benchmark.{noise}_{size}"
        inputs += [f"trial_summary_{size}", f"hyperparameters_{size}", f"params:experiment_{size}"]
        datasets |= {f"trial_summary_{size}": f"{cell}.trial_summary",
                     f"hyperparameters_{size}": f"{cell}.hyperparameters"}
        parameters[f"params:experiment_{size}"] = f"params:{cell}.experiment"
    node = Node(report_noise_level, inputs, ["summary_table", "summary_markdown", "figure"], name="report_dfl")
    return Pipeline([node], namespace=f"dfl_benchmark.{noise}", inputs=datasets, parameters=parameters)


def create_pipeline(**kwargs) -> Pipeline:
    return sum((_report(noise) for noise in NOISE_LEVELS), Pipeline([]))
