"""A damaged newest version is named (issue 51 item 11): a run killed or out of disk while
saving leaves a truncated file, and a later run that read it failed with the reader's own
EOFError, no version folder named."""

import contextlib
import resource
import signal

import numpy as np
import pandas as pd
import pytest
from kedro.io.core import DatasetError, Version

from mom_pipeline.datasets import RunCSVDataset, RunParquetDataset, RunPickleDataset

OLDER, NEWER = "2026-01-01T00.00.00.000Z", "2026-01-01T00.00.03.000Z"


@pytest.mark.parametrize("dataset, name, keep", [(RunPickleDataset, "problem.pkl", 40),
                                                 (RunPickleDataset, "problem.pkl", 0),
                                                 (RunParquetDataset, "curve.parquet", 40)])
def test_a_truncated_newest_version_names_its_folder_and_the_remedy(tmp_path, dataset, name, keep):
    table = pd.DataFrame({"lam": [0.01 * k for k in range(200)]})
    for version in (OLDER, NEWER):
        dataset(filepath=str(tmp_path / name), version=Version(None, version)).save(table)
    damaged = tmp_path / name / NEWER / name
    damaged.write_bytes(damaged.read_bytes()[:keep])  # the kill during the save
    newest = dataset(filepath=str(tmp_path / name), version=Version(None, None))
    with pytest.raises(DatasetError) as raised:
        newest.load()
    message = str(raised.value)
    assert f"version '{NEWER}' is incomplete or damaged" in message
    assert f"Delete the folder {damaged.parent} to read the version before it" in message
    assert "--load-versions=" in message and str(damaged) in message
    damaged.parent.joinpath(name).unlink()
    damaged.parent.rmdir()  # what the message says to do
    pd.testing.assert_frame_equal(dataset(filepath=str(tmp_path / name), version=Version(None, None)).load(), table)


def test_a_missing_dataset_keeps_kedros_own_message(tmp_path):
    with pytest.raises(DatasetError, match="Did not find any versions") as raised:
        RunCSVDataset(filepath=str(tmp_path / "absent.csv"), version=Version(None, None)).load()
    assert "damaged" not in str(raised.value)


@contextlib.contextmanager
def file_size_limit(n_bytes):
    """Writes past n_bytes fail with EFBIG (the kernel's answer to a full quota), as on a full disk."""
    previous_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the process is killed
    resource.setrlimit(resource.RLIMIT_FSIZE, (n_bytes, previous_limit[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, previous_limit)
        signal.signal(signal.SIGXFSZ, previous_handler)


# (RunParquetDataset too, but pyarrow's failed write leaves CPython 3.11's parser state broken
# for the rest of the test process: pytest's summary then fails in ast.parse.)
@pytest.mark.parametrize("dataset, name", [(RunPickleDataset, "model.pkl"), (RunCSVDataset, "table.csv")])
def test_a_save_out_of_room_names_the_path_and_leaves_the_previous_version_newest(tmp_path, dataset, name):
    """A full disk during `inverse` left a truncated problem.pkl as the newest version, so the
    next `prescribe` stopped on it although the previous run's was complete; the error named
    only the dataset."""
    rng = np.random.default_rng(0)
    small = pd.DataFrame({"lam": [0.1, 1.0]})
    dataset(filepath=str(tmp_path / name), version=Version(None, OLDER)).save(small)
    large = pd.DataFrame({"lam": rng.random(200_000)})  # 1.6 MB pickled, 3.8 MB as text
    with file_size_limit(100_000), pytest.raises(DatasetError) as raised:
        dataset(filepath=str(tmp_path / name), version=Version(None, NEWER)).save(large)
    message = str(raised.value)
    assert str(tmp_path / name / NEWER / name) in message and "File too large" in message
    assert "The disk is full" in message and "earlier versions are untouched" in message
    assert not (tmp_path / name / NEWER).exists()
    pd.testing.assert_frame_equal(dataset(filepath=str(tmp_path / name), version=Version(None, None)).load(), small)
