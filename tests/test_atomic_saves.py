"""Saves are whole or nothing (issue 51 item 11): a save cut short by a full disk or a kill -9
left a truncated CSV, PNG or pickle at its final path, as the newest version, and a later run
(``prescribe``, ``--from-nodes``) read it. Now every file goes to a temporary beside it and is
renamed into place only when the save completed (`mom_pipeline.atomic_files`)."""

import contextlib
import errno
import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
import yaml
from fsspec.implementations.local import LocalFileOpener
from kedro.io import AbstractDataset
from kedro.io.core import DatasetError, parse_dataset_definition

from mom_pipeline import atomic_files
from mom_pipeline.data_cleanup import clean
from mom_pipeline.datasets import ModelTrainingDataset, SaveWholeOrNothing

ROOT = Path(__file__).resolve().parents[1]
CATALOGS = sorted((ROOT / "conf").glob("*/catalog*.yml"))
NOT_FILES = ("mom_pipeline.tracking_process.TrackingProcessDataset",)  # MLflow metrics, no file
OLDER, NEWER = "2026-01-01T00.00.00.000Z", "2026-01-01T00.00.03.000Z"


def _entry(name: str) -> dict:
    return yaml.safe_load((ROOT / "conf" / "base" / "catalog.yml").read_text())[name]


def _dataset(name: str, folder: Path, version: str | None):
    """The catalog entry `name` with its file in `folder` (versioned entries at `version`)."""
    config = {k: v for k, v in _entry(name).items() if k != "metadata"}
    config["filepath"] = str(folder / Path(config["filepath"]).name)
    return AbstractDataset.from_config(name, config, save_version=version)


def _figure(pixels: int = 40):
    figure, axes = plt.subplots()
    axes.imshow(np.random.default_rng(0).random((pixels, pixels)))  # noise: the PNG does not compress
    return figure


def _plotly(points: int = 10):
    return go.Figure(go.Scatter(y=np.random.default_rng(0).random(points)))


def _table(rows: int = 3):
    return pd.DataFrame({"lam": np.random.default_rng(1).random(rows)})


# one entry per kind of file in the catalog; the data to save, small and large
ENTRIES = {
    "{source}.theta": (lambda: _table(), lambda: _table(200_000)),  # CSV
    "{figure}.summary_table": (lambda: _table(), lambda: _table(200_000)),  # CSV read back by its run
    "{figure}.data_summary": (lambda: _table(), lambda: _table(200_000)),  # Parquet
    "{source}.network": (lambda: _table(), lambda: _table(200_000)),  # pickle
    "{source}.problem": (lambda: _table(), lambda: _table(200_000)),  # pickle read back by its run
    "{figure}.figure": (lambda: _figure(), lambda: _figure(600)),  # PNG
    "{figure}.figure_plotly": (lambda: _plotly(), lambda: _plotly(200_000)),  # JSON
    "{figure}.summary_markdown": (lambda: "| a |\n|---|\n| 1 |\n", lambda: "| 1 |\n" * 200_000),  # text
}
READABLE = {name for name in ENTRIES if name != "{figure}.figure"}  # MatplotlibDataset is write only


def _same(name: str, loaded, saved) -> bool:
    if isinstance(saved, pd.DataFrame):
        return np.allclose(loaded["lam"], saved["lam"])
    if isinstance(saved, go.Figure):
        return np.allclose(loaded.data[0].y, saved.data[0].y)
    return loaded == saved


@contextlib.contextmanager
def disk_full_after(n_bytes: int):
    """Every file write fails with ENOSPC once `n_bytes` of it are written, as on a full disk."""
    original = LocalFileOpener.write

    def write(self, data, *args, **kwargs):
        written = getattr(self, "_test_written", 0)
        room = max(n_bytes - written, 0)
        if len(data) > room:
            original(self, bytes(data[:room]))
            self._test_written = n_bytes
            raise OSError(errno.ENOSPC, "No space left on device")
        self._test_written = written + len(data)
        return original(self, data, *args, **kwargs)

    LocalFileOpener.write = write
    try:
        yield
    finally:
        LocalFileOpener.write = original


def _assert_nothing_of_newer_and_older_read(name, folder, older_data, raised):
    filename = Path(_entry(name)["filepath"]).name
    message = str(raised.value)
    assert str(folder / filename / NEWER / filename) in message and "No space left on device" in message
    assert "The disk is full" in message and "earlier versions are untouched" in message
    assert not (folder / filename / NEWER).exists()  # no file at the final path, no version folder
    assert [p.name for p in (folder / filename).iterdir()] == [OLDER]
    if name in READABLE:
        assert _same(name, _dataset(name, folder, None).load(), older_data)


def test_every_file_dataset_of_the_catalog_saves_whole_or_nothing():
    kinds = set()
    for catalog in CATALOGS:
        for name, entry in yaml.safe_load(catalog.read_text()).items():
            if "type" not in entry or entry["type"] in NOT_FILES:
                continue  # an environment's entry that changes only the path takes the type of base
            dataset_class, _ = parse_dataset_definition(dict(entry))
            kinds.add(dataset_class.__name__)
            assert issubclass(dataset_class, (SaveWholeOrNothing, ModelTrainingDataset)), (catalog.name, name)
    assert len(kinds) >= 9  # the catalog was read (CSV, Parquet, pickle, PNG, JSON, text, input tables, ...)


@pytest.mark.parametrize("name", ENTRIES)
def test_a_save_cut_short_leaves_no_file_and_the_previous_version_newest(tmp_path, name):
    small, large = ENTRIES[name]
    older_data = small()
    _dataset(name, tmp_path, OLDER).save(older_data)
    with disk_full_after(1000), pytest.raises(DatasetError) as raised:
        _dataset(name, tmp_path, NEWER).save(large())
    _assert_nothing_of_newer_and_older_read(name, tmp_path, older_data, raised)
    plt.close("all")


def test_an_unversioned_file_is_left_as_it_was(tmp_path):
    config = {"type": "mom_pipeline.datasets.AtomicCSVDataset", "filepath": str(tmp_path / "arcs.csv")}
    AbstractDataset.from_config("arcs", config).save(_table())
    before = (tmp_path / "arcs.csv").read_bytes()
    with disk_full_after(1000), pytest.raises(DatasetError, match="the file is as it was before the save"):
        AbstractDataset.from_config("arcs", config).save(_table(100_000))
    assert (tmp_path / "arcs.csv").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["arcs.csv"]  # and no temporary


def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True).returncode == 0


@pytest.mark.parametrize("name", ["{source}.theta", "{figure}.figure", "{source}.problem"])
def test_a_full_disk_leaves_no_file_and_the_previous_version_newest(tmp_path, name):
    """A real full disk: a tmpfs of 256 kB (needs the right to mount, as root in the container)."""
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "256k"):
        pytest.skip("cannot mount a tmpfs here (needs root); the injected ENOSPC test covers the same path")
    try:
        small, large = ENTRIES[name]
        older_data = small()
        _dataset(name, disk, OLDER).save(older_data)
        with pytest.raises(DatasetError) as raised:
            _dataset(name, disk, NEWER).save(large())
        _assert_nothing_of_newer_and_older_read(name, disk, older_data, raised)
    finally:
        plt.close("all")
        subprocess.run(["umount", "-l", str(disk)], check=False)


KILLED_MID_WRITE = """
import os, signal, sys
from pathlib import Path
import numpy as np, pandas as pd
from fsspec.implementations.local import LocalFileOpener
from kedro.io import AbstractDataset

config, version = eval(sys.argv[1]), sys.argv[2]
original = LocalFileOpener.write
def write(self, data, *args, **kwargs):  # half of the first block, then kill -9
    original(self, bytes(data[: len(data) // 2]))
    self.flush()
    os.kill(os.getpid(), signal.SIGKILL)
LocalFileOpener.write = write
AbstractDataset.from_config("killed", config, save_version=version).save(
    pd.DataFrame({"lam": np.random.default_rng(1).random(100_000)}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("name", ["{source}.problem", "{source}.theta"])
def test_a_kill_during_a_save_leaves_no_version_that_a_later_run_reads(tmp_path, name):
    """kill -9 in the middle of writing: a later load (a `--from-nodes` run, `prescribe`) reads
    the previous version, and the clean-up removes the unfinished folder without counting it."""
    older_data = _table()
    _dataset(name, tmp_path, OLDER).save(older_data)
    config = {k: v for k, v in _entry(name).items() if k != "metadata"}
    config["filepath"] = str(tmp_path / Path(config["filepath"]).name)
    killed = subprocess.run([sys.executable, "-c", KILLED_MID_WRITE, repr(config), NEWER], capture_output=True,
                            text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr
    filename = Path(config["filepath"]).name
    unfinished = tmp_path / filename / NEWER
    assert not (unfinished / filename).exists()  # only the writer's temporary is there
    assert [atomic_files.is_stale_temporary(p) for p in unfinished.iterdir()] == [True]
    assert _same(name, _dataset(name, tmp_path, None).load(), older_data)
    assert clean(tmp_path, keep=1) == [unfinished]
    assert [p.name for p in (tmp_path / filename).iterdir()] == [OLDER]


def test_the_bytes_are_on_the_disk_before_the_final_name(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(atomic_files.os, "fsync", lambda fd: calls.append("fsync"))
    real_replace = atomic_files.os.replace
    monkeypatch.setattr(atomic_files.os, "replace", lambda a, b: calls.append("replace") or real_replace(a, b))
    atomic_files.write_atomically(tmp_path / "a.json", "{}")
    assert calls == ["fsync", "replace", "fsync"]  # the file, the rename, the folder's entry
    assert (tmp_path / "a.json").read_text() == "{}" and [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_a_failed_atomic_write_leaves_the_old_file(tmp_path, monkeypatch):
    """The models manifest, a trial file, a run report: a write cut short keeps the old file."""
    target = tmp_path / "models.json"
    target.write_text("old")

    def full_disk_open(path, mode):
        file = open(path, mode)  # noqa: SIM115 - closed by the caller's with block
        real_write = file.write
        file.write = lambda data: real_write(data[: len(data) // 2]) and (_ for _ in ()).throw(
            OSError(errno.ENOSPC, "No space left on device"))
        return file

    monkeypatch.setattr(atomic_files, "open", full_disk_open, raising=False)
    with pytest.raises(OSError, match="No space left"):
        atomic_files.write_atomically(target, "new" * 1000)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["models.json"]
