"""Helpers of the networks tests: the real TNTP networks, skipped with the reason when absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from mom_pipeline.networks.files import KNOWN_NETWORKS, NetworkNotFound, locate_network, networks_dir

NETWORKS_DIR = networks_dir()
NET_FILES = {name: files[0] for name, files in KNOWN_NETWORKS.items()}


def network_file(name: str) -> Path:
    return network_files(name)[0]


def network_files(name: str) -> tuple[Path, Path]:
    try:
        return locate_network(name)
    except NetworkNotFound as missing:
        pytest.skip(str(missing))
