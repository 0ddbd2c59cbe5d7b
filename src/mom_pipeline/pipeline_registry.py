"""Project pipelines: one namespaced instance of an experiment template per paper figure.

The experiment templates (`pipelines/experiment/pipeline.py`) read ``params:experiment``, so
the registry composes them explicitly rather than through ``find_pipelines()``: Kedro
1.x filters ``find_pipelines`` by the pipeline names given on the command line, which
here are composites (``shortest_path``), not folders.
"""

from __future__ import annotations

from kedro.pipeline import Pipeline

from mom_pipeline.pipelines import dfl_benchmark, experiment, inverse, inverse_routes

# Which paper figures each registered pipeline reproduces (docs/paper_notes.md's table).
EXPERIMENTS = {
    "shortest_path": ["fig1", "fig2", "fig7"],
    "knapsack": ["fig3", "fig4", "fig6"],
    "online": ["fig5"],
    "kernelized": ["fig4", "fig6", "fig7"],
    # beyond the paper: solver basis vs support basis vs basis-free dual on degenerate LPs
    "formulations": ["formulations"],
}
ONLINE_FIGURES = {"fig5"}
# Every figure of the paper, for one run of the whole paper (`kedro run --pipelines=paper`): one
# start-up and one pool of workers instead of one per figure (about 9 s each).
PAPER_FIGURES = ["fig1", "fig2", "fig3", "fig4", "fig5", "fig6", "fig7"]


def figure_pipeline(figure: str) -> Pipeline:
    """The template under the namespace `figure`: datasets `<figure>.<name>`, parameters
    `params:<figure>.experiment`; ``params:compute`` and ``params:storage`` are shared by every figure."""
    template = experiment.online_pipeline() if figure in ONLINE_FIGURES else experiment.create_pipeline()
    shared = {"params:compute", "params:storage"} & template.inputs()
    return Pipeline(template, namespace=figure, parameters={name: name for name in shared})


def register_pipelines() -> dict[str, Pipeline]:
    figures = {fig: figure_pipeline(fig) for figs in EXPERIMENTS.values() for fig in figs}
    pipelines: dict[str, Pipeline] = {
        name: sum((figures[f] for f in figs), Pipeline([])) for name, figs in EXPERIMENTS.items()
    }
    pipelines["paper"] = sum((figures[f] for f in PAPER_FIGURES), Pipeline([]))
    pipelines["__default__"] = sum(figures.values(), Pipeline([]))
    # Inverse LP on the user's tables (data/01_raw/inverse/) and the shipped example.
    pipelines["inverse"] = inverse.create_pipeline("inverse")
    pipelines["prescribe"] = inverse.prescribe_pipeline("inverse")
    pipelines["inverse_example"] = inverse.example_pipeline("inverse_example")
    # Inverse route choice on a road network (data/01_raw/inverse_routes/) and its generated example.
    pipelines["inverse_routes"] = inverse_routes.create_pipeline("inverse_routes")
    pipelines["inverse_routes_example"] = inverse_routes.example_pipeline("inverse_routes_example")
    # Beyond the paper, not in __default__ (hours at full size): MOM against decision-focused
    # learning on PyEPO's protocol, per problem one experiment per (noise, size) and a report
    # per noise; dfl_benchmark runs every problem, dfl_benchmark_<problem> one.
    for problem in dfl_benchmark.PROBLEMS:
        pipelines[f"dfl_benchmark_{problem}"] = sum(
            (figure_pipeline(f"dfl_benchmark.{cell}") for cell in dfl_benchmark.problem_cells(problem)),
            dfl_benchmark.create_pipeline(problem))
    pipelines["dfl_benchmark"] = sum((pipelines[f"dfl_benchmark_{p}"] for p in dfl_benchmark.PROBLEMS), Pipeline([]))
    # The knapsack at T = 100 alone: all methods together train for about 20 min per trial and
    # degree at T = 1000 there, too much for a small shared machine.
    pipelines["dfl_benchmark_knapsack_small"] = sum(
        (figure_pipeline(f"dfl_benchmark.{cell}") for cell in dfl_benchmark.problem_cells("knapsack", ("n100",))),
        dfl_benchmark.create_pipeline("knapsack", ("n100",)))
    return pipelines
