"""The inverse pipeline's validation figure says whether lambda was chosen or fixed by the user."""

import matplotlib.pyplot as plt
import pytest

from mom_pipeline.inverse import make_example_dataset
from mom_pipeline.pipelines.inverse.nodes import tune_lambda, validate_inputs
from mom_pipeline.pipelines.inverse.params import InverseParams


@pytest.fixture(scope="module")
def problem():
    tables = make_example_dataset(n_observations=40, seed=3)
    problem, _ = validate_inputs(*(tables[name] for name in ("features", "decisions", "constraints", "rhs", "bounds")),
                                 InverseParams())
    return problem


@pytest.mark.parametrize("model, expected, absent", [
    ({}, "lambda chosen from x* alone:\nlambda = ", "fixed"),
    ({"lam": 0.001}, "lambda fixed by the user (model.lam), scored from x* alone:\nlambda = 1e-03", "chosen"),
])
def test_the_title_says_how_lambda_was_set(problem, model, expected, absent):
    inverse = InverseParams(model=model, tuning={"lambdas": [1e-3, 1e-1]})
    _, figure = tune_lambda(problem, inverse)
    title = figure.axes[0].get_title()
    assert title.startswith(expected) and absent not in title
    figure.canvas.draw()
    box = figure.axes[0].title.get_window_extent(figure.canvas.get_renderer())
    assert figure.bbox.x0 <= box.x0 and box.x1 <= figure.bbox.x1  # not clipped on either side
    plt.close(figure)
