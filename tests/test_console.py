import logging

from mom_pipeline.console import NotYetWrittenPreviews

VIZ = "kedro_viz.models.flowchart.node_metadata"


def _preview_failure(name, kind, error):
    return logging.LogRecord(VIZ, logging.WARNING, __file__, 1, "'%s' could not be previewed. Full exception: %s: %s",
                             (name, kind, error), None)


def test_previews_of_unwritten_datasets_get_one_line_and_other_failures_pass():
    quiet = NotYetWrittenPreviews()
    first = _preview_failure("inverse.theta", "VersionNotFoundError", "Did not find any versions")
    assert quiet.filter(first) and "no run has written yet" in first.getMessage() and "inverse.theta" in first.getMessage()
    assert first.levelname == "INFO"  # expected after a partial run: said, not warned
    assert not quiet.filter(_preview_failure("inverse.features", "DatasetError", "[Errno 2] No such file or directory"))
    assert not quiet.filter(_preview_failure("fig1.figure", "VersionNotFoundError", "Did not find any versions"))
    broken = _preview_failure("fig1.summary_table", "ParserError", "bad CSV")
    assert quiet.filter(broken) and "could not be previewed" in broken.getMessage() and broken.levelname == "WARNING"
    other = logging.LogRecord("kedro", logging.WARNING, __file__, 1, "anything", (), None)
    assert quiet.filter(other)


def test_an_input_table_not_yet_written_is_one_of_the_quiet_previews(tmp_path):
    """The input tables' own missing-file error (it names what the table must hold) counts as
    "not yet written", as the OS's 'No such file or directory' does."""
    import pytest
    from kedro.io.core import DatasetError

    from mom_pipeline.pipelines.inverse.datasets import InputTableDataset

    with pytest.raises(DatasetError) as raised:
        InputTableDataset(filepath=str(tmp_path / "routes.csv")).load()
    quiet = NotYetWrittenPreviews()
    assert quiet.filter(_preview_failure("inverse.theta", "VersionNotFoundError", "Did not find any versions"))
    assert not quiet.filter(_preview_failure("inverse_routes.routes", "DatasetError", str(raised.value)))
