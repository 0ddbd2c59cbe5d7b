"""A damaged newest version is named (issue 51 item 11): a run killed or out of disk while
saving leaves a truncated file, and a later run that read it failed with the reader's own
EOFError, no version folder named."""

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
