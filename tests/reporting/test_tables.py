"""Markdown reports as kedro-viz renders them: no stray emphasis, no raw dicts, tables whose
rows have as many cells as their header."""

import re

import pandas as pd

from mom_pipeline.experiments import parse_spec
from mom_pipeline.pipelines.experiment.nodes import report_notes
from mom_pipeline.reporting import online_markdown, online_summary, summary_markdown, summary_table

CODE = re.compile(r"`[^`]*`")


def test_report_notes_quote_identifiers_and_list_settings():
    spec = parse_spec({"name": "fig1", "problem": "shortest_path", "sweep": {"param": "degree", "values": [1, 4]},
                       "fixed": {"n_train": 40, "n_test": 30, "eps_bar": 0.0}, "trials": 2, "seed": 1})
    notes = report_notes(spec)
    prose = CODE.sub("", notes)
    assert "_" not in prose and "*" not in prose  # an underscore outside code turned words into italics
    assert "{" not in notes and "'" not in prose  # no raw dict
    assert "`n_train` = 40, `n_test` = 30, `eps_bar` = 0" in notes and "`degree` in 1, 4" in notes
    assert "`relative_loss`" in notes


def test_online_table_rows_have_the_header_cells():
    steps = pd.DataFrame([dict(experiment="fig5", method=m, trial=t, step=s, cumulative_regret=2.0 * s,
                               cumulative_relative_regret=float(s),
                               mistakes=0, theta_norm=1.0, seconds=0.1) for m in ("A", "B") for t in range(2)
                          for s in range(3)])
    summary = online_summary(steps)
    lines = online_markdown(summary, "t").splitlines()
    table = [line for line in lines if line.startswith("|")]
    assert len({line.count("|") for line in table}) == 1, table  # '||Theta||' split the header
    # Both regrets at the last step (s = 2): raw 4 (the published figure 5's axis), relative 2.
    assert summary["final_cumulative_regret"].tolist() == [4.0, 4.0]
    assert summary["final_cumulative_relative_regret"].tolist() == [2.0, 2.0]


def test_summary_sections_are_named_as_the_paper_names_the_setting():
    evaluation = pd.DataFrame([dict(experiment="fig2", setting="alpha_bar", setting_value=3.0, trial=t, method="MOM",
                                    sample=s, relative_loss=0.1, relative_loss_released=0.1, exact=False, regret=1.0,
                                    optimal_value=10.0) for t in range(2) for s in range(3)])
    trials = pd.DataFrame([dict(experiment="fig2", setting="alpha_bar", setting_value=3.0, trial=t, method="MOM",
                                mean_relative_loss=0.1, fit_seconds=1.0) for t in range(2)])
    markdown = summary_markdown(summary_table(evaluation, trials), "t")
    assert "## attack power = 3" in markdown and "alpha_bar" not in markdown.split("|")[0]


def test_the_markdown_preview_survives_kedro_vizs_emphasis_rules(tmp_path):
    """kedro-viz sanitizes the preview (entities become characters again), then applies
    `_(.*?)_` and `*(.*?)*` to it, line by line, before code spans: the project's preview puts
    a hidden line break after every underscore and asterisk, and shows the text as written."""
    import html

    from mom_pipeline.datasets import VIZ_SEPARATOR, MarkdownDataset

    text = "# Figure 1: shortest path\n\nProblem: `shortest_path`; fixed: `n_train` = 40, `eps_bar` = 0; 2 * 3 * 4\n"
    dataset = MarkdownDataset(filepath=str(tmp_path / "summary.md"))
    dataset.save(text)
    preview = str(dataset.preview())
    rendered = re.sub(r"\*(.*?)\*", r"<em>\1</em>", re.sub(r"_(.*?)_", r"<em>\1</em>", preview))
    assert "<em>" not in rendered
    # the title is a heading as the later ones are: no element before its "# "
    assert re.search(r"^# (.*$)", preview, re.MULTILINE).group(1) == "Figure 1: shortest path"
    shown = html.unescape(preview.replace(VIZ_SEPARATOR, ""))
    assert shown == text  # the hidden breaks aside, the file as written
