"""Reporting node of the DFL benchmark: thin wrapper over mom_pipeline.reporting.dfl."""

from __future__ import annotations

import matplotlib.pyplot as plt

import pandas as pd

from mom_pipeline.experiments import parse_spec
from mom_pipeline.methods.registry import FAMILIES, method_family
from mom_pipeline.reporting.dfl import dfl_family_figure, dfl_figure, dfl_markdown, dfl_results, dfl_table, with_families


PROBLEM_TITLES = {"shortest_path": "Shortest path 5x5", "multi_knapsack": "Knapsack 2 x 32 (LP relaxation)"}


def noise_level_title(experiment: dict) -> str:
    """The title of a noise level's table and figure: the problem and the noise half-width."""
    spec = parse_spec(experiment)
    return f"{PROBLEM_TITLES.get(spec.problem, spec.problem)}, noise half-width {float(spec.fixed.get('eps_bar', 0.0)):g}"


def method_families(experiment: dict) -> dict[str, str]:
    """Method label -> family (`methods.registry.method_family`) of an experiment's methods."""
    return {label: method_family(cfg.estimator, cfg.x_star_only) for label, cfg in parse_spec(experiment).methods.items()}


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
    families = {label: family for experiment in cells[2::3] for label, family in method_families(experiment).items()}
    table = with_families(dfl_table(results), families)
    first = specs[0]
    problems = {spec.problem for spec in specs}
    if len(problems) != 1:
        raise ValueError(f"the experiments of one noise level solve different problems: {sorted(problems)}")
    title = noise_level_title(cells[2])
    costs = (f"{first.fixed.get('cost_formula', 'paper')} formula" if first.problem == "shortest_path"
             else "PyEPO's knapsack generator, LP relaxation")
    notes = (f"Costs: {costs}; {first.fixed.get('n_test')} test samples; "
             f"experiments {', '.join(spec.name for spec in specs)} (seed {first.seed}, {first.trials} trials each; "
             "the sizes share their data seeds). Normalized regret = sum of regrets / sum of optimal values "
             "over the test samples of a trial.")
    figure = dfl_figure(table, title)
    plt.close(figure)
    return table, dfl_markdown(table, title, notes), figure


def report_families(table_noise0: pd.DataFrame, table_noise05: pd.DataFrame, experiment_noise0: dict,
                    experiment_noise05: dict):
    """The family figure of one problem from the summary tables of its two noise levels (one
    experiment of each noise level names the problem and its eps_bar)."""
    specs = [parse_spec(experiment_noise0), parse_spec(experiment_noise05)]
    if specs[0].problem != specs[1].problem:
        raise ValueError(f"the two noise levels solve different problems: {specs[0].problem}, {specs[1].problem}")
    tables = {f"noise {float(spec.fixed.get('eps_bar', 0.0)):g}": table
              for spec, table in zip(specs, (table_noise0, table_noise05))}
    if len(tables) != 2:
        raise ValueError(f"the two noise levels have the same eps_bar: {sorted(tables)}")
    title = f"{PROBLEM_TITLES.get(specs[0].problem, specs[0].problem)}: normalized regret by method family"
    figure = dfl_family_figure(tables, title, FAMILIES)
    plt.close(figure)
    return figure
