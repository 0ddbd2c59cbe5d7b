"""`make notebook`: JupyterLab comes from an optional extra, resolved beside the lock's pins,
and opens the project's notebook; `make test` installs none of it."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _target(makefile: str, name: str) -> str:
    match = re.search(rf"^{name}:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert match, f"no make target {name!r}"
    return match.group(1)


def test_the_notebook_extra_is_optional_and_outside_the_lock():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=\[ ]", spec)[0] for spec in extras["notebook"]}
    assert {"jupyterlab", "ipywidgets"} <= names
    assert not names & {re.split(r"[<>=\[ ]", spec)[0] for spec in extras["test"]}
    pinned = {line.split("==")[0] for line in (ROOT / "requirements.lock").read_text().splitlines() if "==" in line}
    assert not {"jupyterlab", "ipywidgets"} & pinned  # `make install` / `make test` do not install them


def test_make_notebook_installs_the_extra_with_the_locks_pins_and_opens_the_notebook():
    makefile = (ROOT / "Makefile").read_text()
    recipe = _target(makefile, "notebook")
    assert '-c $(LOCK) -e ".[notebook]"' in recipe
    assert "$(BIN)/jupyter lab" in recipe and "$(NOTEBOOK)" in recipe
    notebook = re.search(r"^NOTEBOOK := (\S+)$", makefile, re.MULTILINE).group(1)
    assert (ROOT / notebook).is_file()
