"""Read road networks: TNTP ``_net.tntp`` and ``_trips.tntp`` files, and arc tables (CSV).

TNTP ``_net.tntp``: a metadata block of ``<KEY> value`` lines up to ``<END OF METADATA>``
(``<NUMBER OF NODES>``, ``<NUMBER OF LINKS>`` and ``<FIRST THRU NODE>`` are required,
``<NUMBER OF ZONES>`` is read when present), then one link per line, tab separated and ending
in ``;``. Lines starting with ``~`` are comments; the last one before the first link names the
columns (``init_node term_node capacity length free_flow_time b power speed toll link_type``
when there is none). Nodes are numbered 1..N. Arcs are labelled ``tail-head``. Two links with
the same tail and head are rejected (their labels would clash): give such networks as an arc
table with an ``arc`` id column, which keeps parallel arcs apart.

Every problem raises NetworkInputError naming the file and the line (1-based, as an editor
shows it) or, for arc tables, the row (0-based table position, as in the inverse pipeline's
rejection reports).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from .network import Network, NetworkInputError

TNTP_COLUMNS = ("init_node", "term_node", "capacity", "length", "free_flow_time", "b", "power", "speed", "toll",
                "link_type")
REQUIRED_METADATA = ("NUMBER OF NODES", "NUMBER OF LINKS", "FIRST THRU NODE")
_METADATA = re.compile(r"^\s*<([^>]+)>(.*)$")


def _metadata(lines: list[str], file: str) -> tuple[dict, int]:
    """({KEY: (value text, line number)}, index of the first line after <END OF METADATA>)."""
    meta = {}
    for i, line in enumerate(lines):
        match = _METADATA.match(line)
        if not match:
            if line.strip() and not line.lstrip().startswith("~"):
                raise NetworkInputError(file, f"expected a metadata line '<KEY> value' or <END OF METADATA>; got "
                                              f"{line.strip()[:60]!r}", i + 1)
            continue
        key = match.group(1).strip().upper()
        if key == "END OF METADATA":
            return meta, i + 1
        meta[key] = (match.group(2).strip(), i + 1)
    raise NetworkInputError(file, "no <END OF METADATA> line: not a TNTP file")


def _meta_int(meta: dict, key: str, file: str, required: bool = True) -> int | None:
    if key not in meta:
        if required:
            raise NetworkInputError(file, f"metadata <{key}> is missing")
        return None
    text, line = meta[key]
    try:
        value = float(text)
    except ValueError:
        raise NetworkInputError(file, f"<{key}> {text!r} is not a number", line) from None
    if not value.is_integer() or value < 0:
        raise NetworkInputError(file, f"<{key}> {text!r} is not a non-negative integer", line)
    return int(value)


def _number(text: str, column: str, file: str, line: int, what: str = "line") -> float:
    try:
        value = float(text)
    except ValueError:
        raise NetworkInputError(file, f"value {text!r} in column {column!r} is not a number", line, what) from None
    if not np.isfinite(value):
        raise NetworkInputError(file, f"value {text!r} in column {column!r} is not finite", line, what)
    return value


def _read_lines(path) -> tuple[list[str], str]:
    path = Path(path)
    if not path.is_file():
        raise NetworkInputError(str(path), "no such file")
    return path.read_text(encoding="utf-8", errors="replace").splitlines(), str(path)


def read_tntp_network(path, name: str | None = None) -> Network:
    """A TNTP ``_net.tntp`` file as a Network (labels 1..N, arcs ``tail-head``)."""
    lines, file = _read_lines(path)
    meta, start = _metadata(lines, file)
    n_nodes = _meta_int(meta, "NUMBER OF NODES", file)
    n_links = _meta_int(meta, "NUMBER OF LINKS", file)
    first_thru = _meta_int(meta, "FIRST THRU NODE", file)
    n_zones = _meta_int(meta, "NUMBER OF ZONES", file, required=False)
    if n_nodes < 1:
        raise NetworkInputError(file, f"<NUMBER OF NODES> is {n_nodes}", meta["NUMBER OF NODES"][1])
    if not 0 <= first_thru <= n_nodes + 1:
        raise NetworkInputError(file, f"<FIRST THRU NODE> {first_thru} is outside the nodes 1..{n_nodes}",
                                meta["FIRST THRU NODE"][1])
    if n_zones is not None and n_zones > n_nodes:
        raise NetworkInputError(file, f"<NUMBER OF ZONES> {n_zones} exceeds <NUMBER OF NODES> {n_nodes}",
                                meta["NUMBER OF ZONES"][1])
    columns, rows, line_of = list(TNTP_COLUMNS), [], []
    for i in range(start, len(lines)):
        text = lines[i].strip()
        if not text:
            continue
        if text.startswith("~"):
            if not rows:  # the column header
                header = [c for c in re.split(r"\s+", text.lstrip("~").replace(";", " ").strip()) if c]
                if len(header) >= 2:
                    columns = header
            continue
        if not text.endswith(";"):
            raise NetworkInputError(file, "a link line must end in ';'", i + 1)
        cells = [c.strip() for c in text[:-1].split("\t") if c.strip()]
        if len(cells) == 1:  # space separated instead of tabs
            cells = text[:-1].split()
        if len(cells) != len(columns):
            raise NetworkInputError(file, f"{len(cells)} values but {len(columns)} columns ({' '.join(columns)})", i + 1)
        rows.append([_number(c, columns[j], file, i + 1) for j, c in enumerate(cells)])
        line_of.append(i + 1)
    if len(rows) != n_links:
        raise NetworkInputError(file, f"{len(rows)} link lines but <NUMBER OF LINKS> is {n_links}",
                                meta["NUMBER OF LINKS"][1])
    values = np.asarray(rows, dtype=float).reshape(len(rows), len(columns))
    ends = values[:, :2]
    for k, (u, v) in enumerate(ends):
        for label in (u, v):
            if not label.is_integer() or not 1 <= label <= n_nodes:
                raise NetworkInputError(file, f"link {u:g}-{v:g} uses node {label:g}, which is not one of the "
                                              f"nodes 1..{n_nodes} (<NUMBER OF NODES>)", line_of[k])
    tails, heads = ends[:, 0].astype(np.int64) - 1, ends[:, 1].astype(np.int64) - 1
    labels = np.array([f"{u + 1}-{v + 1}" for u, v in zip(tails, heads)], dtype=object)
    _reject_duplicate_arcs(labels, file, line_of, "line", "give the network as an arc table with an 'arc' id column")
    _reject_loops(tails, heads, labels, file, line_of, "line")
    attributes = pd.DataFrame(values[:, 2:], columns=columns[2:])
    return Network(tails=tails, heads=heads, n_nodes=n_nodes, node_labels=np.arange(1, n_nodes + 1),
                   arc_labels=labels, attributes=attributes, first_thru_node=max(first_thru - 1, 0),
                   name=name or Path(file).name)


def _reject_duplicate_arcs(labels, file: str, where: list, what: str, hint: str) -> None:
    seen: dict = {}
    for k, label in enumerate(labels):
        if label in seen:
            raise NetworkInputError(file, f"arc {label} is given twice ({what}s {where[seen[label]]} and {where[k]}); "
                                          f"parallel arcs need ids of their own: {hint}", where[k], what)
        seen[label] = k


def _reject_loops(tails, heads, labels, file: str, where: list, what: str) -> None:
    loops = np.flatnonzero(tails == heads)
    if loops.size:
        k = int(loops[0])
        raise NetworkInputError(file, f"arc {labels[k]} starts and ends at the same node", where[k], what)


def read_tntp_trips(path, n_zones: int | None = None) -> np.ndarray:
    """A TNTP ``_trips.tntp`` file as the (Z, Z) demand matrix (zones 1..Z at 0..Z-1).

    `n_zones` (e.g. the network's zone count) must match ``<NUMBER OF ZONES>`` when given.
    """
    lines, file = _read_lines(path)
    meta, start = _metadata(lines, file)
    zones = _meta_int(meta, "NUMBER OF ZONES", file)
    if n_zones is not None and n_zones != zones:
        raise NetworkInputError(file, f"<NUMBER OF ZONES> is {zones} but the network has {n_zones} zones",
                                meta["NUMBER OF ZONES"][1])
    demand = np.zeros((zones, zones))
    origin = None
    for i in range(start, len(lines)):
        text = lines[i].strip()
        if not text or text.startswith("~"):
            continue
        if text.lower().startswith("origin"):
            label = _number(text.split()[1] if len(text.split()) > 1 else "", "Origin", file, i + 1)
            if not label.is_integer() or not 1 <= label <= zones:
                raise NetworkInputError(file, f"origin {label:g} is not one of the zones 1..{zones}", i + 1)
            origin = int(label) - 1
            continue
        if origin is None:
            raise NetworkInputError(file, "a demand line before the first 'Origin' line", i + 1)
        for pair in (p for p in text.split(";") if p.strip()):
            if ":" not in pair:
                raise NetworkInputError(file, f"expected 'destination : demand;' pairs; got {pair.strip()!r}", i + 1)
            dest_text, value_text = pair.split(":", 1)
            dest = _number(dest_text.strip(), "destination", file, i + 1)
            value = _number(value_text.strip(), "demand", file, i + 1)
            if not dest.is_integer() or not 1 <= dest <= zones:
                raise NetworkInputError(file, f"destination {dest:g} is not one of the zones 1..{zones}", i + 1)
            if value < 0:
                raise NetworkInputError(file, f"demand {value:g} is negative", i + 1)
            demand[origin, int(dest) - 1] += value
    return demand


def read_arc_table(table, *, first_thru_node: int = 1, name: str | None = None) -> Network:
    """An arc table (DataFrame or CSV path) as a Network.

    Columns: ``tail``, ``head`` (node labels), optional ``arc`` (arc ids: they name the arcs
    and allow parallel arcs; without it arcs are ``tail-head`` and a pair given twice is
    rejected), every other column a numeric arc attribute. Nodes are the labels that occur,
    in increasing order (numeric labels sorted as numbers). ``first_thru_node``: TNTP's rule in
    node labels (nodes with a numeric label below it are zones; 1: no zones).
    """
    if isinstance(table, (str, Path)):
        file = str(table)
        if not Path(file).is_file():
            raise NetworkInputError(file, "no such file")
        table = pd.read_csv(file, dtype={"arc": str, "tail": str, "head": str})
    else:
        file = table.attrs.get("filepath", name or "arcs")
    missing = [c for c in ("tail", "head") if c not in table.columns]
    if missing:
        raise NetworkInputError(file, f"missing column(s) {missing}; the table has columns {list(table.columns)}")
    if not len(table):
        raise NetworkInputError(file, "the arc table is empty")
    ends = table[["tail", "head"]].astype(str).apply(lambda col: col.str.strip())
    for r, (u, v) in enumerate(ends.itertuples(index=False)):
        for label, column in ((u, "tail"), (v, "head")):
            if label in ("", "nan", "None"):
                raise NetworkInputError(file, f"column {column!r} is empty", r, "row")
    labels_seen = pd.unique(ends.to_numpy().ravel())
    numeric = pd.to_numeric(pd.Series(labels_seen), errors="coerce")
    if numeric.notna().all():
        values = np.unique(numeric.to_numpy())
        node_labels = np.array([int(x) if float(x).is_integer() else float(x) for x in values], dtype=object)
        position = {float(x): i for i, x in enumerate(values)}
        lookup = {label: position[float(x)] for label, x in zip(labels_seen, numeric)}
        n_zones = int(np.sum(values < first_thru_node))
    else:
        if first_thru_node > 1:
            raise NetworkInputError(file, f"first_thru_node = {first_thru_node} needs numeric node labels")
        node_labels = np.array(sorted(labels_seen), dtype=object)
        lookup = {label: i for i, label in enumerate(node_labels)}
        n_zones = 0
    tails = np.array([lookup[u] for u in ends["tail"]], dtype=np.int64)
    heads = np.array([lookup[v] for v in ends["head"]], dtype=np.int64)
    rows = list(range(len(table)))
    if "arc" in table.columns:
        arc_labels = np.array([str(a).strip() for a in table["arc"]], dtype=object)
        hint = "arc ids must be unique"
    else:
        arc_labels = np.array([f"{node_labels[u]}-{node_labels[v]}" for u, v in zip(tails, heads)], dtype=object)
        hint = "add an 'arc' id column"
    _reject_duplicate_arcs(arc_labels, file, rows, "row", hint)
    _reject_loops(tails, heads, arc_labels, file, rows, "row")
    attributes = {}
    for column in [c for c in table.columns if c not in ("tail", "head", "arc")]:
        values = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=float)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            r = int(bad[0])
            raise NetworkInputError(file, f"value {table[column].iloc[r]!r} in column {column!r} is not a finite number",
                                    r, "row")
        attributes[column] = values
    return Network(tails=tails, heads=heads, n_nodes=len(node_labels), node_labels=node_labels,
                   arc_labels=arc_labels, attributes=pd.DataFrame(attributes, index=range(len(table))),
                   first_thru_node=n_zones, name=name or Path(str(file)).name)


def read_network(path, first_thru_node: int = 1) -> Network:
    """A network file by its extension: ``.tntp`` (TNTP) or ``.csv`` (arc table)."""
    suffix = Path(str(path)).suffix.lower()
    if suffix == ".tntp":
        return read_tntp_network(path)
    if suffix == ".csv":
        return read_arc_table(path, first_thru_node=first_thru_node)
    raise NetworkInputError(str(path), "a network file must be a TNTP '_net.tntp' file or an arc table '.csv'")
