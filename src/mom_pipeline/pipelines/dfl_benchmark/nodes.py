"""Reporting node of the DFL benchmark: thin wrapper over mom_pipeline.reporting.dfl."""

from __future__ import annotations

import matplotlib.pyplot as plt

from mom_pipeline.experiments import parse_spec
from mom_pipeline.reporting.dfl import dfl_figure, dfl_markdown, dfl_results, dfl_table


PROBLEM_TITLES = {"shortest_path": "Shortest path 5x5", "multi_knapsack": "Knapsack 2 x 32 (LP relaxation)"}


def report_noise_level(*cells):
    """Inputs: (trial_summary, hyperparameters, experiment) of each training size in turn.
    Outputs: the table (CSV), its markdown and the figure of one noise level."""
    if len(cells) % 3:
        raise ValueError(f"report_noise_level takes (trial_summary, hyperparameters, experiment) triples; "
                         f"got {len(cells)} inputs")
    specs = [parse_spec(experiment) for experiment in cells[2::3]]
    noise = {float(spec.fixed.get("eps_bar", 0.0)) for spec in specs}
    if len(noise) != 1:
        raise ValueError(f"the experiments of one noise level have different eps_bar: {sorted(noise)}")
    results = dfl_results(list(cells[0::3]), list(cells[1::3]), [spec.fixed for spec in specs])
    table = dfl_table(results)
    (eps_bar,) = noise
    first = specs[0]
    problems = {spec.problem for spec in specs}
    if len(problems) != 1:
        raise ValueError(f"the experiments of one noise level solve different problems: {sorted(problems)}")
    title = f"{PROBLEM_TITLES.get(first.problem, first.problem)}, noise half-width {eps_bar:g}"
    costs = (f"{first.fixed.get('cost_formula', 'paper')} formula" if first.problem == "shortest_path"
             else "PyEPO's knapsack generator, LP relaxation")
    notes = (f"Costs: {costs}; {first.fixed.get('n_test')} test samples; "
             f"experiments {', '.join(spec.name for spec in specs)} (seed {first.seed}, {first.trials} trials each; "
             "the sizes share their data seeds). Normalized regret = sum of regrets / sum of optimal values "
             "over the test samples of a trial.")
    figure = dfl_figure(results, title)
    plt.close(figure)
    return table, dfl_markdown(table, title, notes), figure
