"""Figure 5's configuration: the released notebook's settings by default, the paper text's in
`--env text_features`, and a deterministic online trial."""

import copy
import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mom_pipeline.experiments.data import generate_experiment, solve_experiment
from mom_pipeline.experiments.online import run_online_trial
from mom_pipeline.experiments.spec import ExperimentSpec
from mom_pipeline.pipelines.experiment.nodes import report_online, run_online
from mom_pipeline.settings import CONFIG_LOADER_ARGS, ProjectConfigLoader

PROJECT_ROOT = Path(__file__).resolve().parents[3]


def _fig5(env: str) -> dict:
    """Figure 5's experiment parameters in `env` (a copy: the tests change theirs)."""
    return copy.deepcopy(_fig5_merged(env))


@functools.cache
def _fig5_merged(env: str) -> dict:
    """Merged once per environment, as a run merges them."""
    loader = ProjectConfigLoader(str(PROJECT_ROOT / "conf"), env=env, **{
        k: v for k, v in CONFIG_LOADER_ARGS.items() if k != "default_run_env"})
    return loader["parameters"]["fig5"]["experiment"]


@pytest.mark.slow
def test_default_is_the_released_notebook_and_text_features_the_papers_text():
    released, text = ExperimentSpec(**_fig5("smoke")), ExperimentSpec(**_fig5("text_features"))
    assert released.plot.regret == "raw" and text.plot.regret == "relative"
    assert released.methods["Perceptron"].params == {"threshold": 0.0, "update_rule": "simultaneous"}
    assert text.methods["Perceptron"].params == {"threshold": 0.5, "update_rule": "sequential"}
    assert released.methods["MOM-FTRL"].params["lambda_scale"] == 1e-6
    assert text.methods["MOM-FTRL"].params["lambda_scale"] == 1.0
    assert released.methods["MOM-FTRL"].params["lambda_offset"] == 1 and text.methods["MOM-FTRL"].params["lambda_offset"] == 0
    # The honest order of Algorithm 2 in both; the look-ahead is only a documented variant.
    assert released.methods["MOM-OGD"].params["look_ahead"] is False
    assert text.methods["MOM-OGD"].params["look_ahead"] is False
    assert (released.fixed["feature_low"], text.fixed["feature_low"]) == (-1.0, 0.0)


def test_online_trial_is_deterministic_and_reports_both_regrets():
    params = {**_fig5("smoke"), "trials": 1}
    spec = ExperimentSpec(**params)
    frames = []
    for _ in range(2):
        data = generate_experiment(spec)
        solutions = solve_experiment(data, spec.basis_mode)
        frames.append(run_online_trial(spec, data[0], solutions[0]).drop(columns="seconds"))
    pd.testing.assert_frame_equal(frames[0], frames[1])
    steps = frames[0]
    for _, part in steps.groupby("method"):
        np.testing.assert_allclose(part["cumulative_regret"], np.cumsum(part["regret"]))
        np.testing.assert_allclose(part["cumulative_relative_regret"], np.cumsum(part["relative_regret"]))
        assert (part["regret"] >= -1e-9).all()
    summary, _, figure, plotly_figure = report_online(steps.assign(seconds=0.0), params)
    last = steps[steps["step"] == steps["step"].max()].set_index("method")
    np.testing.assert_allclose(summary.set_index("method")["final_cumulative_regret"],
                               last.loc[summary["method"], "cumulative_regret"])
    assert figure.axes[0].get_ylabel().startswith("cumulative regret")
    assert plotly_figure.layout.yaxis.title.text.startswith("cumulative regret")


def test_a_look_ahead_run_says_so_on_the_figure_and_in_the_summary():
    params = {**_fig5("smoke"), "trials": 1, "fixed": {**_fig5("smoke")["fixed"], "n_train": 20}}
    spec = ExperimentSpec(**params)
    data = generate_experiment(spec)
    steps = run_online_trial(spec, data[0], solve_experiment(data, spec.basis_mode)[0])

    def caption_and_markdown(experiment):
        _, markdown, figure, _ = report_online(steps, experiment)
        return " ".join(t.get_text() for t in figure.texts).replace("\n", " "), markdown

    caption, markdown = caption_and_markdown(params)
    assert "look-ahead" not in caption and "look-ahead" not in markdown
    methods = {**params["methods"], "MOM-OGD": {**params["methods"]["MOM-OGD"],
                                                "params": {**params["methods"]["MOM-OGD"]["params"], "look_ahead": True}}}
    caption, markdown = caption_and_markdown({**params, "methods": methods})
    assert "MOM-OGD in the released notebook's look-ahead order" in caption
    assert "MOM-OGD in the released notebook's look-ahead order" in markdown


def test_the_console_gets_one_line_per_online_figure(caplog):
    """Each trial's methods are logged at DEBUG; the console has one line for the
    figure with each method's mean final regret (30 trials x 4 methods were 120 INFO lines)."""
    params = {**_fig5("smoke"), "trials": 2}
    spec = ExperimentSpec(**params)
    data = generate_experiment(spec)
    solutions = solve_experiment(data, spec.basis_mode)
    with caplog.at_level("DEBUG", logger="mom_pipeline"):
        steps = run_online(data, solutions, params, {"backend": "sequential"})
    info = [r.getMessage() for r in caplog.records if r.levelname == "INFO" and "regret" in r.getMessage()]
    (line,) = info
    last = steps[steps["step"] == steps["step"].max()].groupby("method", sort=False)["cumulative_regret"].mean()
    assert line == f"fig5: 2 trials of {steps['step'].max()} steps, mean final cumulative regret: " + ", ".join(
        f"{method} {value:.3g}" for method, value in last.items())
    assert sum("steps in" in r.getMessage() for r in caplog.records if r.levelname == "DEBUG") == 2 * len(last)
