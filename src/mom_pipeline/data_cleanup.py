"""Disk footprint of data/ and its clean-up: keep the newest N versions of every dataset.

    python -m mom_pipeline.data_cleanup --keep 3          # or: make clean-data KEEP=3
    python -m mom_pipeline.data_cleanup --report          # sizes only: make data-size

* Versioned datasets (``<name>/<version>/<name>``): the newest `keep` versions stay, and
  with each the versions of the same run of every dataset of its pipeline (the datasets
  under ``<layer>/<namespace>/``, e.g. ``inverse``): a run's versions share its name, and a
  model is kept with the problem it was fitted on even when a later run that failed saved a
  newer problem. Only complete versions count: a version folder without its file (a save
  that failed or was killed leaves at most a temporary file there, `atomic_files`) is
  removed, unless a running writer's temporary is in it.
* Model files (``06_models/<figure>/trials/*.pkl``): a file stays when a kept models manifest
  lists it, or when it is newer than the newest manifest (a killed run's finished trials,
  which its rerun will reuse). Temporary files of writers that are gone are removed.
* Method pointers (``06_models/method_index/*.json``, `storage.MethodIndex`): a pointer goes
  with the model file it points to.
* Folders of the former layout (``06_models/checkpoints``, ``06_models/<figure>/models``)
  are removed: the current code never reads them.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

from mom_pipeline.atomic_files import is_stale_temporary, is_temporary
from mom_pipeline.experiments.storage import MethodIndex, TrialStore

VERSION = re.compile(r"^\d{4}-\d\d-\d\dT\d\d\.\d\d\.\d\d\.\d{3}Z$")


def size_of(path: Path) -> int:
    """Bytes of a file or of every file under a folder."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def figure_sizes(data: Path) -> dict[str, int]:
    """Bytes per experiment folder name (data/<layer>/<figure>/...), summed over layers."""
    sizes: dict[str, int] = {}
    for layer in sorted(p for p in data.iterdir() if p.is_dir()) if data.exists() else []:
        for folder in (p for p in layer.iterdir() if p.is_dir()):
            sizes[folder.name] = sizes.get(folder.name, 0) + size_of(folder)
    return sizes


def versioned_datasets(data: Path) -> list[Path]:
    """Folders that hold Kedro versions (<name>/<timestamp>/<name>)."""
    return sorted({p.parent.parent for p in data.rglob("*")
                   if VERSION.match(p.parent.name) and p.name == p.parent.parent.name})


def run_group(data: Path, dataset: Path) -> tuple:
    """The datasets whose versions of one run are kept together: those of one namespace folder
    (``data/<layer>/<namespace>/<dataset>``, across layers), else the dataset alone."""
    parts = dataset.relative_to(data).parts
    return ("namespace", parts[1]) if len(parts) >= 3 else ("dataset", *parts)


def _being_written(folder: Path) -> bool:
    """Whether a running process writes a temporary file in `folder`."""
    return any(is_temporary(path) and not is_stale_temporary(path) for path in folder.iterdir())


def clean(data: Path, keep: int, dry_run: bool = False) -> list[Path]:
    """Remove what the module docstring says; returns the removed paths."""
    if keep < 1:
        raise ValueError(f"keep must be >= 1; got {keep}")
    removed: list[Path] = []

    def remove(path: Path) -> None:
        removed.append(path)
        if not dry_run:
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)

    datasets = {}
    for dataset in versioned_datasets(data):
        folders = sorted(p for p in dataset.iterdir() if p.is_dir() and VERSION.match(p.name))
        datasets[dataset] = [folder for folder in folders if (folder / dataset.name).exists()]
        for unfinished in sorted(set(folders) - set(datasets[dataset])):
            if not _being_written(unfinished):
                remove(unfinished)
    kept_runs: dict[tuple, set[str]] = {}
    for dataset, versions in datasets.items():
        kept_runs.setdefault(run_group(data, dataset), set()).update(v.name for v in versions[-keep:])
    for dataset, versions in datasets.items():
        runs = kept_runs[run_group(data, dataset)]
        for old in versions:
            if old.name not in runs:
                remove(old)
    models = data / "06_models"
    for legacy in [models / "checkpoints", *models.glob("*/models")]:
        if legacy.is_dir():
            remove(legacy)
    for trials in models.glob("*/trials"):
        store = TrialStore(trials)
        if not dry_run:
            store.remove_stale_temporaries()
        manifests = sorted((trials.parent / "models.json").glob("*/models.json"))
        kept = [m for m in manifests if m.parent not in removed]
        listed = {row["key"] for m in kept for row in json.loads(m.read_text())["trials"]}
        newest = max((m.stat().st_mtime for m in manifests), default=float("inf"))
        for path in trials.glob("*.pkl"):
            if path.stem not in listed and path.stat().st_mtime < newest:
                remove(path)
    index = models / "method_index"
    if index.is_dir():  # pointers to model files removed above (or earlier) go too
        if not dry_run:
            TrialStore(index).remove_stale_temporaries()
        gone = {path.resolve() for path in removed}
        for pointer, target in MethodIndex(index).targets().items():
            if target is None or target in gone or not target.exists():
                remove(pointer)
    return removed


def report(data: Path) -> str:
    """A size table per experiment folder and the total of data/."""
    lines = [f"{'folder':16s} {'MB':>10s}"]
    for name, size in sorted(figure_sizes(data).items(), key=lambda item: -item[1]):
        lines.append(f"{name:16s} {size / 1e6:10.1f}")
    lines.append(f"{'total data/':16s} {size_of(data) / 1e6:10.1f}" if data.exists() else "no data/ folder")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="data", help="the project's data folder")
    parser.add_argument("--keep", type=int, default=3, help="versions to keep per dataset (>= 1)")
    parser.add_argument("--report", action="store_true", help="print sizes only, remove nothing")
    parser.add_argument("--dry-run", action="store_true", help="list what would be removed")
    args = parser.parse_args(argv)
    data = Path(args.data)
    print(report(data))
    if args.report:
        return
    before = size_of(data)
    removed = clean(data, args.keep, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    for path in removed:
        print(f"{verb} {path}")
    if not args.dry_run:
        print(f"{verb} {len(removed)} paths, freed {(before - size_of(data)) / 1e6:.1f} MB")
        print(report(data))


if __name__ == "__main__":
    main()
