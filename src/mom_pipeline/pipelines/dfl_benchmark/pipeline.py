"""DFL benchmark reports: the trial summaries of every training size -> one table and one
figure per (problem, noise level) (namespace ``dfl_benchmark.<problem prefix><noise level>``),
then per problem a figure of both noise levels with one line per method family, drawn from
those tables (namespace ``dfl_benchmark.<problem>``).

The experiments themselves are the usual template under
``dfl_benchmark.<problem prefix><noise>_<size>`` (composed in the pipeline registry); their
settings, the problem generator included, are in parameters_dfl_benchmark.yml. The shortest
path keeps the unprefixed names (``dfl_benchmark.noise0_n100``); the knapsack's start with
``knapsack_``.
"""

from kedro.pipeline import Node, Pipeline

from .nodes import report_families, report_noise_level

# The benchmark's problems and the prefix of their experiments' and reports' names.
PROBLEMS = {"shortest_path": "", "knapsack": "knapsack_"}
NOISE_LEVELS = ("noise0", "noise05")
SIZES = ("n100", "n1000", "n5000")


def problem_cells(problem: str, sizes: tuple[str, ...] = SIZES) -> tuple[str, ...]:
    """The experiments of one problem: one per (noise level, training size)."""
    prefix = PROBLEMS[problem]
    return tuple(f"{prefix}{noise}_{size}" for noise in NOISE_LEVELS for size in sizes)


CELLS = tuple(cell for problem in PROBLEMS for cell in problem_cells(problem))


def _report(prefix: str, noise: str, sizes: tuple[str, ...]) -> Pipeline:
    """The report of one noise level of a problem; its inputs are the experiments of `sizes`."""
    inputs, datasets, parameters = [], {}, {}
    for size in sizes:
        cell = f"dfl_benchmark.{prefix}{noise}_{size}"
        inputs += [f"trial_summary_{size}", f"hyperparameters_{size}", f"params:experiment_{size}"]
        datasets |= {f"trial_summary_{size}": f"{cell}.trial_summary",
                     f"hyperparameters_{size}": f"{cell}.hyperparameters"}
        parameters[f"params:experiment_{size}"] = f"params:{cell}.experiment"
    node = Node(report_noise_level, inputs, ["summary_table", "summary_markdown", "figure"], name="report_dfl")
    return Pipeline([node], namespace=f"dfl_benchmark.{prefix}{noise}", inputs=datasets, parameters=parameters)


def _family_report(problem: str, first_size: str) -> Pipeline:
    """The family figure of `problem` from its noise levels' summary tables."""
    prefix = PROBLEMS[problem]
    tables = {f"table_{noise}": f"dfl_benchmark.{prefix}{noise}.summary_table" for noise in NOISE_LEVELS}
    parameters = {f"params:experiment_{noise}": f"params:dfl_benchmark.{prefix}{noise}_{first_size}.experiment"
                  for noise in NOISE_LEVELS}
    node = Node(report_families, [*tables, *parameters], "family_figure", name="report_dfl_families")
    return Pipeline([node], namespace=f"dfl_benchmark.{problem}", inputs=tables, parameters=parameters)


def create_pipeline(problem: str | None = None, sizes: tuple[str, ...] = SIZES, **kwargs) -> Pipeline:
    """The reports of `problem` (a key of PROBLEMS), or of every problem, over `sizes`."""
    problems = list(PROBLEMS) if problem is None else [problem]
    reports = [_report(PROBLEMS[p], noise, sizes) for p in problems for noise in NOISE_LEVELS]
    return sum(reports + [_family_report(p, sizes[0]) for p in problems], Pipeline([]))
