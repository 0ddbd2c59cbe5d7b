"""Where the real TNTP networks are: the folder MOM_NETWORKS_DIR (default /work/shared/networks),
one subfolder per network. The project ships no copy of them."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_NETWORKS_DIR = "/work/shared/networks"
# name -> (net file, trips file) inside the networks folder
KNOWN_NETWORKS = {
    "SiouxFalls": ("SiouxFalls/SiouxFalls_net.tntp", "SiouxFalls/SiouxFalls_trips.tntp"),
    "Berlin-Friedrichshain": ("Berlin-Friedrichshain/friedrichshain-center_net.tntp",
                              "Berlin-Friedrichshain/friedrichshain-center_trips.tntp"),
    "Anaheim": ("Anaheim/Anaheim_net.tntp", "Anaheim/Anaheim_trips.tntp"),
}


class NetworkNotFound(FileNotFoundError):
    """A network file that is not there; the message says where it was looked for and how to point to it."""


def networks_dir() -> Path:
    return Path(os.environ.get("MOM_NETWORKS_DIR", DEFAULT_NETWORKS_DIR))


def trips_file_of(net_file) -> Path:
    """The ``_trips.tntp`` next to a ``_net.tntp`` file."""
    net_file = Path(net_file)
    return net_file.with_name(net_file.name.replace("_net.tntp", "_trips.tntp"))


def locate_network(name_or_path: str) -> tuple[Path, Path]:
    """(net file, trips file) of a known network name (in `networks_dir()`) or a ``_net.tntp`` path."""
    if name_or_path in KNOWN_NETWORKS:
        net, trips = (networks_dir() / part for part in KNOWN_NETWORKS[name_or_path])
    else:
        net = Path(name_or_path)
        trips = trips_file_of(net)
    for path, what in ((net, "network"), (trips, "trip table")):
        if not path.is_file():
            raise NetworkNotFound(
                f"the {what} file {str(path)!r} of {name_or_path!r} is absent. The real TNTP networks are read from "
                f"MOM_NETWORKS_DIR (now {str(networks_dir())!r}); set it to the folder holding SiouxFalls/, Anaheim/, "
                "..., give the path of a '_net.tntp' file (its '_trips.tntp' beside it), or use the built-in network "
                "'grid' that needs no file")
    return net, trips
