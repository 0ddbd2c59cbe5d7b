import os

import pytest

os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MPLBACKEND", "Agg")

# A test that runs Kedro on a copy of the project is a whole-pipeline test whatever its file:
# the fixture says so, so a new one cannot slip into `make test-fast` unmarked.
PIPELINE_FIXTURES = {"project_copy", "smoke_run"}


def pytest_collection_modifyitems(items):
    for item in items:
        if PIPELINE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.pipeline)
