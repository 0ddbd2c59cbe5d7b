"""The DFL benchmark's family figure: one line per method family in each panel (the family's
best method per cell, its marker naming it), MOM x* and CaVE on their own, a row of panels per
noise level; every registered method has a family."""

import matplotlib
import numpy as np
import pandas as pd
import pytest

from mom_pipeline.methods.registry import FAMILIES, METHODS, method_family
from mom_pipeline.pipelines.dfl_benchmark.nodes import method_families, report_families
from mom_pipeline.reporting.dfl import dfl_family_figure, dfl_figure, family_best, with_families

# label -> (family, regret at degree 1 and 4): "a" beats "b" in its family at degree 1, "b" at 4
METHOD_ROWS = {"LS": ("two-stage", 0.01, 0.05), "RF": ("two-stage", 0.02, 0.04),
               "SPO+": ("regret-based", 0.005, 0.02), "PFYL": ("perturbed", 0.006, 0.03),
               "CaVE": ("cone-aligned", 0.02, 0.06), "CaVE+": ("cone-aligned", 0.03, 0.05),
               "MOM x*": ("MOM x*", 0.004, 0.025), "MOM x* (cost-tuned)": ("MOM x*", 0.005, 0.02)}


def _summary(shift: float) -> pd.DataFrame:
    rows = [dict(method=m, family=f, n_train=n, degree=d, normalized_regret_mean=v + shift,
                 normalized_regret_std=0.001, training_seconds_mean=1.0, trials=2)
            for m, (f, r1, r4) in METHOD_ROWS.items() for n in (20, 40) for d, v in ((1, r1), (4, r4))]
    return pd.DataFrame(rows)


def test_family_best_picks_the_lowest_mean_of_each_family_per_cell():
    best = family_best(_summary(0.0)).set_index(["family", "n_train", "degree"])["method"]
    assert best["two-stage", 20, 1] == "LS" and best["two-stage", 20, 4] == "RF"
    assert best["cone-aligned", 40, 1] == "CaVE" and best["cone-aligned", 40, 4] == "CaVE+"
    assert best["MOM x*", 20, 1] == "MOM x*" and best["MOM x*", 20, 4] == "MOM x* (cost-tuned)"
    assert len(best) == 5 * 2 * 2  # 5 families x 2 sizes x 2 degrees


def test_family_figure_has_a_line_per_family_and_a_row_per_noise_level():
    tables = {"noise 0": _summary(0.0), "noise 0.5": _summary(0.1)}
    fig = dfl_family_figure(tables, "toy", FAMILIES)
    assert len(fig.axes) == 2 * 2  # rows: noise levels; columns: training sizes
    assert [ax.get_title() for ax in fig.axes] == ["noise 0, T = 20", "noise 0, T = 40", "noise 0.5, T = 20",
                                                   "noise 0.5, T = 40"]
    for ax in fig.axes:
        coloured = [line for line in ax.lines if line.get_color() != "black"]
        black = [line for line in ax.lines if line.get_color() == "black"]
        assert len(coloured) == 5 and len({line.get_color() for line in coloured}) == 5  # one per family
        assert len(black) == 2  # MOM x* and CaVE on their own
        # the family lines are the families' best means (within the x offsets)
        assert sorted(round(float(np.min(line.get_ydata())), 6) for line in coloured) == sorted(
            round(v + (0.1 if "0.5" in ax.get_title() else 0.0), 6) for v in (0.005, 0.006, 0.01, 0.02, 0.004))
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[:3] == ["two-stage", "    LS", "    RF"]
    assert "MOM x* on its own" in legend and "CaVE on its own" in legend and "    CaVE+" in legend
    assert "best method in each cell" in fig._suptitle.get_text()
    matplotlib.pyplot.close("all")


def test_a_method_without_a_family_is_named():
    table = _summary(0.0).drop(columns="family")
    with pytest.raises(ValueError, match="no method family for \\['RF'\\]"):
        with_families(table, {m: f for m, (f, *_) in METHOD_ROWS.items() if m != "RF"})
    with pytest.raises(ValueError, match="not among the families"):
        dfl_family_figure({"noise 0": _summary(0.0)}, "toy", ("two-stage",))


def test_every_registered_method_has_a_family():
    assert all(entry.family in FAMILIES for entry in METHODS.values())
    assert method_family("MOM") == "MOM" and method_family("MOM", x_star_only=True) == "MOM x*"
    assert method_family("CaVE", x_star_only=True) == "cone-aligned" and method_family("IMLE") == "perturbed"


def test_the_report_node_draws_both_noise_levels_of_the_configured_methods():
    experiment = dict(name="toy", problem="shortest_path", sweep=dict(param="degree", values=[1, 4]), trials=2, seed=0,
                      fixed=dict(n_train=20, n_test=10, eps_bar=0.0),
                      methods={"LS": {"estimator": "OLS"}, "MOM x*": {"estimator": "MOM", "x_star_only": True},
                               "CaVE": {"estimator": "CaVE", "x_star_only": True}})
    families = method_families(experiment)
    assert families == {"LS": "two-stage", "MOM x*": "MOM x*", "CaVE": "cone-aligned"}
    table = _summary(0.0)
    table = with_families(table[table["method"].isin(families)], families)
    noisy = {**experiment, "fixed": {**experiment["fixed"], "eps_bar": 0.5}}
    fig = report_families(table, table, experiment, noisy)
    assert [ax.get_title() for ax in fig.axes][::2] == ["noise 0, T = 20", "noise 0.5, T = 20"]
    assert "Shortest path" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="same eps_bar"):
        report_families(table, table, experiment, experiment)


def test_method_figure_draws_a_summary_table_with_its_spread_cut_at_zero():
    table = _summary(0.0)
    table.loc[table["method"] == "LS", "normalized_regret_std"] = 0.5  # wider than every mean
    table.loc[table["method"] == "RF", "normalized_regret_std"] = np.nan  # a spread not kept
    fig = dfl_figure(table, "toy")
    assert len(fig.axes) == 2 and fig.get_figheight() >= 3.8
    lows = [np.min(segment[:, 1]) for ax in fig.axes for c in ax.collections for segment in c.get_segments()]
    assert min(lows) == pytest.approx(0.0)  # LS's bars end at 0, not below it
    assert len(fig.axes[-1].get_legend().get_texts()) == len(METHOD_ROWS)
    many = pd.concat([table.assign(method=table["method"] + f" {k}") for k in range(3)])
    assert dfl_figure(many, "toy").get_figheight() > fig.get_figheight()  # room for 24 legend entries
    matplotlib.pyplot.close("all")
