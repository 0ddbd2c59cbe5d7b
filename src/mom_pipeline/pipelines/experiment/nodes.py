"""Nodes of an experiment (one paper figure), stage by stage: thin wrappers over
mom_pipeline.experiments and mom_pipeline.reporting.

generate_data -> extract_bases -> plan_training (trained when Kedro saves the plan to `models`:
`datasets.ModelTrainingDataset`) -> evaluate_models -> report_experiment, or,
for an online experiment, generate_data -> extract_bases -> run_online -> report_online.
Kedro hands every node the parsed, typed experiment spec (`params:experiment`).
"""

from __future__ import annotations

import logging
import time

import matplotlib.pyplot as plt
import pandas as pd

from mom_pipeline.datasets import TrialModels
from mom_pipeline.experiments import (ExperimentSpec, TrialData, TrialSolutions, describe_trials, generate_experiment,
                                      parse_spec, solve_experiment)
from mom_pipeline.experiments.compute import ComputeConfig, StorageConfig, imap_trials, map_trials
from mom_pipeline.experiments.evaluate import evaluate_trial, trial_summary
from mom_pipeline.experiments.identity import check_generated, check_same_trial, check_tables, method_key, training_key
from mom_pipeline.experiments.online import log_online_summary, run_online_trial
from mom_pipeline.experiments.progress import progress
from mom_pipeline.experiments.storage import StoredTrial, TrainingPlan
from mom_pipeline.experiments.train import (hyperparameter_rows, log_failed_cell_summary, log_failed_cells,
                                           train_for_storage, with_reused)
from mom_pipeline.reporting import (box_metric, boxplot_figure, boxplot_plotly, look_ahead_note, online_markdown,
                                    online_summary, regret_axis, regret_curve_figure, regret_curve_plotly, summary_markdown,
                                    summary_table, trial_count)

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- data generation


def generate_data(experiment: ExperimentSpec) -> list[TrialData]:
    """Generate every (setting, trial) of the experiment from its seed."""
    spec = parse_spec(experiment)  # Kedro hands over the parsed spec: a no-op then
    start = time.perf_counter()
    trials = generate_experiment(spec)
    log.info("%s: generated %d trials in %.2f s", spec.name, len(trials), time.perf_counter() - start)
    return trials


def summarize_data(problem_data: list[TrialData]) -> pd.DataFrame:
    """One row per trial (sizes, cost scale) for a quick look in kedro-viz."""
    return describe_trials(problem_data)


# ----------------------------------------------------------------------------- basis extraction


def extract_bases(problem_data: list[TrialData], experiment: ExperimentSpec) -> list[TrialSolutions]:
    """Optimal solutions of train and test samples and the training bases, per trial."""
    spec = parse_spec(experiment)
    start = time.perf_counter()
    solutions = solve_experiment(problem_data, spec.basis_mode, spec.name)
    log.info("%s: solved and extracted bases (%s mode) for %d trials in %.2f s", spec.name, spec.basis_mode,
             len(solutions), time.perf_counter() - start)
    return solutions


def summarize_bases(problem_data: list[TrialData], solutions: list[TrialSolutions]) -> pd.DataFrame:
    """One row per trial with support sizes, degeneracy and the basis mode used."""
    return describe_trials(problem_data, solutions)


def _checked_trials(spec: ExperimentSpec, problem_data: list[TrialData], solutions: list[TrialSolutions]) -> dict:
    """(setting, trial) -> (trial, solutions), after checking that the trials were generated
    with this run's parameters and that each trial's solutions were solved from its data."""
    check_generated(spec, problem_data)
    by_cell = {}
    for trial, solution in zip(problem_data, solutions, strict=True):
        check_same_trial("solutions", solution.data_key, trial, spec.name)
        by_cell[(trial.setting, trial.trial)] = (trial, solution)
    return by_cell


# ----------------------------------------------------------------------------- training


def plan_training(problem_data: list[TrialData], solutions: list[TrialSolutions], experiment: ExperimentSpec,
                 compute: ComputeConfig, storage: StorageConfig) -> TrainingPlan:
    """The plan to train every method on every trial; nothing is trained here. Kedro saves the
    plan to the `models` dataset (`datasets.ModelTrainingDataset`), and that save is where the
    training runs: it reuses the trials it already stores and calls the plan's `train` with the
    others, passing the methods it found already trained on the same data (by this or another
    experiment); `train` streams them from the configured backend (`experiments.compute`) a few
    in flight at a time, each fitted by `experiments.train.train_for_storage`, and the dataset
    writes each trial as soon as it is done (so a killed run resumes from its finished trials)."""
    spec = parse_spec(experiment)
    compute, storage = ComputeConfig.from_params(compute), StorageConfig.from_params(storage)
    by_cell = _checked_trials(spec, problem_data, solutions)
    keys = {cell: training_key(spec, by_cell[cell][0], storage.keep_models) for cell in sorted(by_cell)}
    method_keys = {cell: {config.label: method_key(spec, by_cell[cell][0], config, storage.keep_models)
                          for config in spec.method_configs()} for cell in keys}

    def train(cells: list, reused: dict | None = None) -> object:
        reused = reused or {}
        complete = [cell for cell in cells if set(reused.get(cell, ())) == set(method_keys[cell])]
        for cell in complete:  # every method found trained: nothing for a worker to do
            trial = by_cell[cell][0]
            yield with_reused(spec, StoredTrial(key=keys[cell], data_key=trial.key, setting=cell[0], trial=cell[1]),
                              reused[cell])
        items = [(spec, *by_cell[cell], keys[cell], storage.keep_models, frozenset(reused.get(cell, ())))
                 for cell in cells if cell not in complete]
        seen, errors, trained = {}, {}, 0
        for stored in imap_trials(train_for_storage, items, compute, desc=f"{spec.name}: train"):
            log_failed_cells(spec, stored.setting, stored.trial, stored.methods, seen, errors)
            trained += 1
            yield with_reused(spec, stored, reused.get((stored.setting, stored.trial), {}))
        log_failed_cell_summary(spec.name, seen, trained, errors)

    return TrainingPlan(name=spec.name, keys=keys, train=train, method_keys=method_keys,
                        data_keys={cell: by_cell[cell][0].key for cell in keys}, keep_models=storage.keep_models,
                        min_free_bytes=int(storage.min_free_gb * 1e9), resume=storage.resume,
                        trained_since=storage.trained_since)


# ----------------------------------------------------------------------------- evaluation


def evaluate_models(problem_data: list[TrialData], solutions: list[TrialSolutions], models: TrialModels,
                    experiment: ExperimentSpec) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per (setting, trial, method, test sample), and the hyperparameters chosen on
    validation for every (setting, trial, method). Each trial's models are loaded once, one
    trial at a time; data, solutions and models must belong to the same trial."""
    spec = parse_spec(experiment)
    check_generated(spec, problem_data)
    started = time.perf_counter()
    frames, rows = [], []
    for t, s in progress(list(zip(problem_data, solutions, strict=True)), desc=f"{spec.name}: evaluate"):
        stored = models.load(t.setting, t.trial)
        check_same_trial("models", stored.data_key, t, spec.name)
        frames.append(evaluate_trial(spec, t, s, stored.methods))
        rows += hyperparameter_rows(spec, t.setting, t.setting_value, t.trial, stored.methods)
    table = pd.concat(frames, ignore_index=True)
    log.info("%s: evaluated %d test decisions in %.1f s", spec.name, len(table), time.perf_counter() - started)
    return table, pd.DataFrame(rows)


def summarize_trials(evaluation: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, trial, method)."""
    return trial_summary(evaluation)


# ----------------------------------------------------------------------------- reporting


def _title(spec: ExperimentSpec) -> str:
    what = f"{spec.problem.replace('_', ' ')}, {trial_count(spec.trials)}"
    return f"Figure {spec.figure}: {what}" if spec.figure else f"{spec.name}: {what}"


def _settings_text(settings: dict) -> str:
    """`name` = value pairs for a markdown report (a raw dict printed braces and quotes, and the
    underscores of its names turned text into italics)."""
    return ", ".join(f"`{name}` = {value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool)
                     else f"`{name}` = `{value}`" for name, value in settings.items()) or "nothing"


def report_notes(spec: ExperimentSpec) -> str:
    """The markdown report's line under its title: what was run and what the figure shows."""
    swept = ", ".join(f"{v:g}" for v in spec.sweep_values)
    return (f"Problem: `{spec.problem}`; swept: `{spec.sweep_param}` in {swept}; fixed: {_settings_text(spec.fixed)}; "
            f"{trial_count(spec.trials)}; seed {spec.seed}; bases: `{spec.basis_mode}`. Relative loss as the paper "
            f"defines it; the figure shows `{spec.plot.metric}`.")


def report_experiment(evaluation: pd.DataFrame, trial_summary: pd.DataFrame, experiment: ExperimentSpec):
    """Summary (CSV and markdown), the box-plot figure (matplotlib) and its plotly twin, drawn
    as ``experiment.plot`` says (metric, shared y range, log axis)."""
    spec = parse_spec(experiment)
    check_tables(spec, evaluation, trial_summary)
    summary = summary_table(evaluation, trial_summary)
    metric = box_metric(spec.problem, spec.plot.metric)
    markdown = summary_markdown(summary, _title(spec), report_notes(spec))
    style = dict(metric=metric, log_scale=spec.plot.log_y, share_y=spec.plot.share_y)
    figure = boxplot_figure(trial_summary, _title(spec), **style)
    plotly_figure = boxplot_plotly(trial_summary, _title(spec), **style)
    plt.close(figure)  # the dataset saves it; keep pyplot's registry from growing
    return summary, markdown, figure, plotly_figure


# ----------------------------------------------------------------------------- online (figure 5)


def run_online(problem_data: list[TrialData], solutions: list[TrialSolutions], experiment: ExperimentSpec,
               compute: ComputeConfig) -> pd.DataFrame:
    """One row per (trial, method, step); trials fan out on the configured backend."""
    spec = parse_spec(experiment)
    by_cell = _checked_trials(spec, problem_data, solutions)
    frames = map_trials(run_online_trial, [(spec, *pair) for pair in by_cell.values()],
                        ComputeConfig.from_params(compute), desc=f"{spec.name}: online")
    steps = pd.concat(frames, ignore_index=True)
    log_online_summary(spec.name, steps)
    return steps


def report_online(online_steps: pd.DataFrame, experiment: ExperimentSpec):
    """Summary (CSV, markdown) and cumulative-regret curves with 95% bands (PNG, plotly)."""
    spec = parse_spec(experiment)
    summary = online_summary(online_steps)
    exclude = spec.curves_exclude
    title = f"Figure {spec.figure}: online {spec.problem.replace('_', ' ')}, {trial_count(spec.trials)}"
    note = look_ahead_note([c.label for c in spec.method_configs() if c.params.get("look_ahead")])
    markdown = online_markdown(summary, title, exclude) + (f"\n{note[0].upper()}{note[1:]}.\n" if note else "")
    axis = regret_axis(spec.problem, spec.plot.regret)
    figure = regret_curve_figure(online_steps, title, axis, exclude=exclude, notes=(note,))
    plotly_figure = regret_curve_plotly(online_steps, title, axis)
    plt.close(figure)
    return summary, markdown, figure, plotly_figure
