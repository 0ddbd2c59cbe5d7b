"""docs/architecture.md stays true where a test can check it: the figure template's nodes it
lists are the template's nodes, and the files it names on figure 1's path exist."""

from __future__ import annotations

import re
from pathlib import Path

from mom_pipeline.pipelines import experiment

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _figure_path() -> str:
    return PAGE[PAGE.index("## A figure, from `conf/` to its PNG"):PAGE.index("`kedro viz run` shows the same flow")]


def test_listed_template_nodes_are_the_template_nodes_in_a_valid_order():
    step = re.search(r"^3\. .*?(?=^4\. )", _figure_path(), re.MULTILINE | re.DOTALL).group(0)
    listed = re.findall(r"`([a-z_]+)`", step.split("Its nodes, in the order\n   they run:")[1].split("(")[0])
    pipeline = experiment.create_pipeline()
    assert sorted(listed) == sorted(node.name for node in pipeline.nodes)
    # the listed order runs: every node's inputs are made by nodes listed before it (or are inputs)
    made = set(pipeline.inputs())
    by_name = {node.name: node for node in pipeline.nodes}
    for name in listed:
        assert set(by_name[name].inputs) <= made, f"{name} is listed before a node it reads from"
        made |= set(by_name[name].outputs)


def test_files_on_the_figure_path_exist():
    named = re.findall(r"`((?:conf|src)/[\w/.]+\.(?:py|yml))`", _figure_path())
    assert len(named) >= 8
    missing = [path for path in named if not (ROOT / path).is_file()]
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


def test_the_path_reaches_the_files_that_train():
    path = _figure_path()
    for training in ("src/mom_pipeline/datasets.py", "src/mom_pipeline/experiments/compute.py",
                     "src/mom_pipeline/experiments/train.py"):
        assert f"`{training}`" in path
