"""Figures: log axis with the floor stated, visible medians, the paper's labels, plotly boxes
centred on their labels, regret bands; tracker metric names."""

import matplotlib
import numpy as np
import pandas as pd
import pytest

from mom_pipeline.reporting import (box_metric, boxplot_figure, boxplot_plotly, metric_name, regret_axis,
                                    regret_curve_figure, regret_curve_plotly, trial_count)
from mom_pipeline.reporting.figures import (LOG_FLOOR, MEDIAN_COLOR, PLOTLY_CAPTION_LINE, PLOTLY_GRID_COLOR,
                                           PLOTLY_TICK_BAND, log_ticks)


@pytest.fixture()
def trials():
    rng = np.random.default_rng(0)
    rows = [dict(setting="alpha_bar", setting_value=v, trial=t, method=m, mean_relative_loss=loss)
            for v in (0.1, 3.0) for t in range(3) for m, loss in (("OLS", rng.uniform(0.01, 0.1)),
                                                                  ("MOM", 0.0 if t == 0 else rng.uniform(1e-3, 1e-2)))]
    return pd.DataFrame(rows)


def test_trial_count():
    assert trial_count(1) == "1 trial" and trial_count(3) == "3 trials"


def test_boxplot_log_axis_floor_medians_and_labels(trials):
    fig = boxplot_figure(trials, "t")
    axes = fig.axes
    assert [ax.get_yscale() for ax in axes] == ["log", "log"]
    assert [ax.get_title() for ax in axes] == ["attack power = 0.1", "attack power = 3"]
    texts = " ".join(t.get_text() for t in fig.texts)
    assert "2 value(s) below" in texts and "3 trials" in texts  # the zero of trial 0 in each panel
    medians = [line for line in axes[0].lines if line.get_color() == MEDIAN_COLOR and line.get_linewidth() == 2]
    assert len(medians) == 2  # one per box, drawn thick in black over the coloured boxes
    # the floored zero is drawn at the floor (the whisker's end), not dropped
    assert min(np.min(line.get_ydata()) for line in axes[0].lines if len(line.get_ydata())) == pytest.approx(LOG_FLOOR)
    linear = boxplot_figure(trials, "t", log_scale=False)
    assert linear.axes[0].get_yscale() == "linear"
    matplotlib.pyplot.close("all")


def test_plotly_boxes_centred_on_their_labels_with_the_png_statistics(trials):
    fig = boxplot_plotly(trials, "t")
    boxes = [trace for trace in fig.data if trace.type == "box"]
    assert len(boxes) == 4  # 2 methods x 2 settings
    for trace in boxes:
        assert set(trace.x) == {trace.name}
    assert fig.layout.boxmode == "overlay"
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis2.type == "log"
    assert min(t.lowerfence[0] for t in boxes) == pytest.approx(LOG_FLOOR)
    # the medians and whisker ends the PNG draws, box by box (plotly's own quartiles differ on few trials)
    png = boxplot_figure(trials, "t")
    for ax, panel in zip(png.axes, (boxes[:2], boxes[2:])):
        thick = [line for line in ax.lines if line.get_color() == MEDIAN_COLOR and line.get_linewidth() == 2]
        assert [line.get_ydata()[0] for line in thick] == pytest.approx([t.median[0] for t in panel])
        ends = sorted(np.concatenate([line.get_ydata() for line in ax.lines if line.get_linestyle() == "-"]))
        assert ends[0] == pytest.approx(min(t.lowerfence[0] for t in panel))
        assert ends[-1] == pytest.approx(max(t.upperfence[0] for t in panel))
    matplotlib.pyplot.close("all")


def test_regret_curves_have_bands():
    steps = pd.DataFrame([dict(method=m, trial=t, step=s, cumulative_regret=s * (1 + t) * w, theta_norm=1.0)
                          for m, w in (("A", 1.0), ("B", 2.0)) for t in range(3) for s in range(5)])
    fig = regret_curve_plotly(steps, "t")
    bands = [t for t in fig.data if t.fill == "toself"]
    assert [b.name for b in bands] == ["A 95% CI", "B 95% CI"]
    assert all(np.ptp(b.y) > 0 for b in bands)


def test_metric_names_are_tracker_safe():
    assert metric_name("SPO+", "degree_4", "exact_rate") == "SPOplus.degree_4.exact_rate"
    assert metric_name("a=b", "x") == "a_b.x"


def _shortest_path_trials():
    """Per-trial means of the paper's ratio and of the released metric (64x and more), on two
    degrees whose losses differ by two orders of magnitude."""
    rows = [dict(setting="degree", setting_value=d, trial=t, method=m, mean_relative_loss=loss * scale,
                 mean_relative_loss_released=80 * loss * scale)
            for d, scale in ((1, 1.0), (6, 100.0)) for t in range(4)
            for m, loss in (("OLS", 1e-3 * (t + 1)), ("MOM", 2e-3 * (t + 1)))]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("metric, axis_text, caption_text", [
    ("relative_loss", r"c^\top x^*", "y: the paper's ratio"),
    ("relative_loss_released", "released code's metric", "y: the released code's metric"),
])
def test_box_figure_names_its_metric_and_draws_its_column(metric, axis_text, caption_text):
    trials = _shortest_path_trials()
    style = box_metric("shortest_path", metric)
    fig = boxplot_figure(trials, "t", metric=style)
    assert axis_text in fig.axes[0].get_ylabel()
    assert caption_text in " ".join(t.get_text() for t in fig.texts).replace("\n", " ")
    column = {"relative_loss": "mean_relative_loss", "relative_loss_released": "mean_relative_loss_released"}[metric]
    drawn = max(np.max(line.get_ydata()) for line in fig.axes[1].lines if len(line.get_ydata()))
    assert drawn == pytest.approx(trials.loc[trials["setting_value"] == 6, column].max())
    plotly = boxplot_plotly(trials, "t", metric=style)
    assert plotly.layout.yaxis.title.text == style.plotly_label and "$" not in style.plotly_label
    assert max(t.upperfence[0] for t in plotly.data if t.type == "box") == pytest.approx(trials[column].max())
    matplotlib.pyplot.close("all")


def test_knapsack_has_no_released_variant_of_its_metric():
    assert "released" not in box_metric("knapsack").note
    with pytest.raises(ValueError, match="no box figure"):
        box_metric("knapsack", "relative_loss_released")


@pytest.mark.parametrize("share_y", [False, True])
def test_panels_share_a_y_range_only_when_asked(share_y):
    trials = _shortest_path_trials()
    fig = boxplot_figure(trials, "t", metric=box_metric("shortest_path"), share_y=share_y)
    low, high = (ax.get_ylim() for ax in fig.axes)
    assert (low == high) is share_y  # the degrees differ 100x: own ranges differ
    caption = " ".join(t.get_text() for t in fig.texts).replace("\n", " ")
    assert ("one y range for all panels" if share_y else "each panel its own y range") in caption
    plotly = boxplot_plotly(trials, "t", metric=box_metric("shortest_path"), share_y=share_y)
    assert (tuple(plotly.layout.yaxis.range) == tuple(plotly.layout.yaxis2.range)) is share_y
    matplotlib.pyplot.close("all")


def _online_steps():
    """Raw cumulative regret 3 times the relative one (||c_t|| = 3 at every step)."""
    return pd.DataFrame([dict(method=m, trial=t, step=s, cumulative_regret=3.0 * s * w, cumulative_relative_regret=s * w,
                              theta_norm=1.0 / w)
                         for m, w in (("MOM-OGD", 1.0), ("Suboptimality-OGD", 20.0)) for t in range(3)
                         for s in range(1, 6)])


@pytest.mark.parametrize("regret, final, label", [("raw", 15.0, "cumulative regret"),
                                                  ("relative", 5.0, "cumulative relative regret")])
def test_regret_figure_draws_the_chosen_regret_and_says_which(regret, final, label):
    axis = regret_axis("knapsack", regret)
    fig = regret_curve_figure(_online_steps(), "t", axis)
    regret_axis_drawn = fig.axes[0]
    ogd = next(line for line in regret_axis_drawn.lines if line.get_label() == "MOM-OGD")
    assert ogd.get_ydata()[-1] == pytest.approx(final)
    assert regret_axis_drawn.get_ylabel().startswith(label)
    caption = " ".join(t.get_text() for t in fig.texts).replace("\n", " ")
    assert ("the raw cumulative regret, as the published figure 5" if regret == "raw" else
            "the sum of relative losses, the paper text's definition") in caption
    plotly = regret_curve_plotly(_online_steps(), "t", axis)
    assert plotly.data[1].y[-1] == pytest.approx(final) and plotly.layout.yaxis.title.text.startswith(label)
    assert "_{" not in plotly.layout.yaxis.title.text and "<sub>s≤t</sub>" in plotly.layout.yaxis.title.text
    matplotlib.pyplot.close("all")


def test_regret_figure_says_why_it_leaves_a_method_out():
    fig = regret_curve_figure(_online_steps(), "t", exclude=("Suboptimality-OGD",))
    regret_axis, norm_axis = fig.axes
    assert [line.get_label() for line in regret_axis.lines] == ["MOM-OGD"]
    assert [line.get_label() for line in norm_axis.lines] == ["MOM-OGD", "Suboptimality-OGD"]
    caption = " ".join(t.get_text() for t in fig.texts).replace("\n", " ")
    assert "leaves out Suboptimality-OGD" in caption and "grows linearly" in caption
    assert "Suboptimality-OGD 300 (20x the largest curve)" in caption  # final mean regret 15 * 20 against 15
    assert norm_axis.get_ylabel() == r"$\|\Theta_t\|_F$"  # math text, not the raw name
    plain = regret_curve_figure(_online_steps(), "t")
    assert "leaves out" not in " ".join(t.get_text() for t in plain.texts)
    matplotlib.pyplot.close("all")


@pytest.mark.parametrize("n_settings", [1, 4])
def test_box_caption_fits_inside_the_figure(n_settings):
    """Figure 6's one-panel smoke figure clipped its caption on both sides."""
    rows = [dict(setting="degree", setting_value=v, trial=t, method=m, mean_relative_loss=0.01 * (t + 1))
            for v in range(1, n_settings + 1) for t in range(2)
            for m in ("RF", "OLS", "Ridge", "PolyRidge", "RbfRidge", "SPO+", "MOM", "PolyMOM", "RbfMOM")]
    fig = boxplot_figure(pd.DataFrame(rows), "t", metric=box_metric("knapsack"))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    for text in fig.texts:
        box = text.get_window_extent(renderer)
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0, text.get_text()
    caption_top = max(t.get_window_extent(renderer).y1 for t in fig.texts if "boxes over" in t.get_text())
    tick_bottom = min(label.get_window_extent(renderer).y0 for label in fig.axes[0].get_xticklabels())
    assert caption_top <= tick_bottom  # the caption does not run into the method names
    matplotlib.pyplot.close("all")


def test_plotly_twin_draws_the_png_ticks_floor_and_black_medians(trials):
    """kedro-viz's preview: no bare minor-tick digits 2..9, the floor labelled 10⁻⁴ (not
    '100μ'), black outlines and medians on boxes filled with the method's colour."""
    fig = boxplot_plotly(trials, "t")
    for axis in (fig.layout.yaxis, fig.layout.yaxis2):
        assert axis.tickmode == "array" and not {"2", "3", "4", "5", "6", "7", "8", "9"} & set(axis.ticktext)
        assert all(label.startswith(("10", "2×10", "5×10")) for label in axis.ticktext), axis.ticktext
    assert "10⁻⁴" in fig.layout.yaxis.ticktext  # the floor, where the zeros are drawn
    assert 10 ** fig.layout.yaxis.range[0] < LOG_FLOOR < 10 ** fig.layout.yaxis.range[1]
    boxes = [trace for trace in fig.data if trace.type == "box"]
    assert {trace.line.color for trace in boxes} == {MEDIAN_COLOR}
    assert len({trace.fillcolor for trace in boxes}) == 2  # one colour per method


def test_plotly_twin_keeps_its_caption_and_grid_under_kedro_vizs_theme(trials):
    """kedro-viz replaces the twin's margins (a caption below the plotting area was cut off)
    and styles only its first x and y axes (the second panel kept plotly_white's white grid on
    the dark theme): the caption sits inside the plotting area under the panels, and every axis
    has the project's grid colour."""
    fig = boxplot_plotly(trials, "t")
    layout = fig.layout.to_plotly_json()
    (caption,) = [a for a in layout["annotations"] if "boxes over" in a["text"]]
    assert caption["yref"] == "paper" and caption["y"] >= 0 and caption["yanchor"] == "bottom"
    assert not caption.get("yshift")  # nothing placed in the margins
    lines = caption["text"].count("<br>") + 1
    y_axes = [layout[name] for name in layout if name.startswith("yaxis")]
    assert len(y_axes) == 2
    assert {axis["domain"][0] for axis in y_axes} == {PLOTLY_TICK_BAND + PLOTLY_CAPTION_LINE * lines}
    axes = [layout[name] for name in layout if name.startswith(("xaxis", "yaxis"))]
    assert {axis.get("gridcolor") for axis in axes} == {PLOTLY_GRID_COLOR}


@pytest.mark.parametrize("low, high, expected", [
    (1e-4, 0.5, ["10⁻⁴", "10⁻³", "10⁻²", "10⁻¹"]),
    (0.02, 0.06, ["2×10⁻²", "5×10⁻²"]),
    (0.03, 0.04, ["10⁻²"]),  # no labelled value inside: the decade below, so the axis still has a tick
])
def test_log_ticks_are_labelled_as_matplotlib_labels_them(low, high, expected):
    assert log_ticks(low, high)[1] == expected
