"""Project datasets: the training and fitted models of a figure (`ModelTrainingDataset`), a
markdown file that kedro-viz previews (`MarkdownDataset`), kedro-datasets' file datasets with
saves that are whole or nothing (`SaveWholeOrNothing`: `AtomicCSVDataset`,
`AtomicParquetDataset`, `AtomicPickleDataset`; the figures' in `figure_datasets`), and
versioned datasets that read back their own run's version (`OwnRunVersion`:
`RunPickleDataset`, `RunParquetDataset`, `RunCSVDataset`). Every file dataset of the
catalog is one of these (tests/test_atomic_saves.py checks it).

The models dataset is where a figure's models are trained: saving it runs the training. Its
files: one per trial, written once, and a versioned manifest.

``{figure}.models`` in conf/base/catalog.yml. Saving takes a `TrainingPlan` (the output of
the `plan_training` node, which trains nothing itself): trials whose model file already exists
and loads are reused (logged in the main process, so the line reaches the console with any
backend); of the others, the methods already trained on the same data by any experiment
(`method_index`, `storage.MethodIndex`) are reused and the rest are trained by the plan's
`train` (`experiments.train.train_for_storage`, fanned out by `experiments.compute`), and
each is written atomically as soon as it is done (`experiments.storage.TrialStore`). The
manifest ``models.json/<version>/models.json`` then lists this run's trials and their files;
loading reads the manifest of a version and returns a `TrialModels` lookup. Files are named
by content hash, so a failed or killed run never replaces a finished one: the previous
manifest and its files stay complete.
"""

from __future__ import annotations

import contextlib
import errno
import html
import json
import logging
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

from kedro.io.core import AbstractVersionedDataset, DatasetError, Version
from kedro_datasets._typing import HTMLPreview
from kedro_datasets.pandas import CSVDataset, ParquetDataset
from kedro_datasets.pickle import PickleDataset
from kedro_datasets.text import TextDataset

from mom_pipeline.atomic_files import ReplacingLocalFileSystem, write_atomically
from mom_pipeline.experiments.storage import MethodIndex, StoredTrial, TrainingPlan, TrialStore
from mom_pipeline.experiments.train import trained_by

log = logging.getLogger(__name__)


class OwnRunVersion:
    """Mixin for a versioned dataset: a node reads the version its own run saved.

    Kedro loads the newest version on disk, and a run's versions are named by the time its
    session started: a run started later that saves first (two runs at once, the second with
    a fixed lambda) would hand the first run's next node the second run's table. With this
    mixin the load version is the run's own save version whenever that version exists; a run
    that did not save the dataset (``--from-nodes``, ``prescribe``) reads the newest, as
    before, and ``--load-versions`` still pins one."""

    def _fetch_latest_load_version(self) -> str:
        own = self._version.save if self._version else None
        if own and self._cached_load_version is None and self._exists_function(str(self._get_versioned_path(own))):
            self._cached_load_version = own
        return super()._fetch_latest_load_version()


class DamagedVersionNamed:
    """Mixin for a versioned dataset: a version that cannot be read is named, with what to do.

    Saves are whole or nothing (`SaveWholeOrNothing`), but a version written otherwise (by
    hand, by an older version of the project, a disk that lost data) can be truncated, and a
    later run (``--from-nodes``, ``prescribe``) that reads it failed with the reader's own
    error (``EOFError`` for a pickle, no file named at all)."""

    def load(self):
        try:
            return super().load()
        except DatasetError as error:
            cause = error.__cause__
            if cause is None or not self._version:  # Kedro's own message (no version at all, ...) says it already
                raise
            path = Path(self._get_load_path())
            raise DatasetError(
                f"{path} cannot be read ({type(cause).__name__}: {str(cause) or 'the file ends early'}): version "
                f"{path.parent.name!r} is incomplete or damaged (a run killed, or out of disk, while saving it). "
                f"Delete the folder {path.parent} to read the version before it, pin one with --load-versions="
                "<dataset>:<version>, or rerun the node that writes it") from cause


class SaveWholeOrNothing:
    """Mixin for a kedro-datasets file dataset: a save writes whole files or none, and a
    failed save names the path.

    The dataset's own ``save`` writes through ``self._fs.open``; here that is a
    `ReplacingLocalFileSystem` of the dataset's own, and the save runs in its fsspec
    transaction: every file goes to a temporary beside its final path and is fsynced and
    renamed into place only when the whole save returned (`mom_pipeline.atomic_files`). A save that fails (a full disk, a file-size limit,
    an object that cannot be written) or is killed leaves no file at the final path, so Kedro
    never takes its version folder for a version and a later run (``prescribe``,
    ``--from-nodes``) reads the previous complete one. The version folder a failed save made
    is removed, and the error names the path (it named only the dataset: "inverse.problem:
    ... [Errno 28] No space left on device"). Remote file systems keep fsspec's own writes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self._protocol == "file":
            self._fs = ReplacingLocalFileSystem(auto_mkdir=getattr(self._fs, "auto_mkdir", True))

    def save(self, data) -> None:
        # the dataset's own save unwrapped (as Kedro's `__init_subclass__` unwraps it): its
        # wrapper would check for the saved version before the files are renamed into place,
        # and this class's save has the same wrapper around it
        wrapped = super().save
        own_save = partial(wrapped.__wrapped__, self) if hasattr(wrapped, "__wrapped__") else wrapped
        try:
            if isinstance(self._fs, ReplacingLocalFileSystem):
                with self._fs.transaction:
                    own_save(data)
            else:
                own_save(data)
        except Exception as error:
            path = Path(self._get_versioned_path(self.resolve_save_version()) if self._version else self._filepath)
            if self._version:
                with contextlib.suppress(OSError):  # the folder holds another file, or was never made
                    path.parent.rmdir()
            cause = error.__cause__ if isinstance(error, DatasetError) and error.__cause__ else error
            remedy = (" The disk is full: free space under it (`make clean-data KEEP=3` keeps the newest three "
                      "versions of every dataset), then rerun." if getattr(cause, "errno", None) in _NO_ROOM else "")
            kept = (f"nothing of version {path.parent.name!r} is kept, earlier versions are untouched"
                    if self._version else "the file is as it was before the save")
            raise DatasetError(f"{path} could not be written ({type(cause).__name__}: {cause}); {kept}."
                               f"{remedy}") from error


_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class AtomicCSVDataset(DamagedVersionNamed, SaveWholeOrNothing, CSVDataset):
    """pandas.CSVDataset whose saves are whole or nothing (`SaveWholeOrNothing`)."""


class AtomicParquetDataset(DamagedVersionNamed, SaveWholeOrNothing, ParquetDataset):
    """pandas.ParquetDataset whose saves are whole or nothing (`SaveWholeOrNothing`)."""


class AtomicPickleDataset(DamagedVersionNamed, SaveWholeOrNothing, PickleDataset):
    """pickle.PickleDataset whose saves are whole or nothing (`SaveWholeOrNothing`)."""


# Each class below names its mixins and its kedro-datasets class directly: Kedro wraps the save
# of every subclass again, and a versioned wrapper inside another draws a second save version
# when none is pinned (an `Atomic*` subclass would save to another folder than it reports).

class RunPickleDataset(OwnRunVersion, DamagedVersionNamed, SaveWholeOrNothing, PickleDataset):
    """pickle.PickleDataset, saves whole or nothing, that reads back its own run's version (`OwnRunVersion`)."""


class RunParquetDataset(OwnRunVersion, DamagedVersionNamed, SaveWholeOrNothing, ParquetDataset):
    """pandas.ParquetDataset, saves whole or nothing, that reads back its own run's version (`OwnRunVersion`)."""


class RunCSVDataset(OwnRunVersion, DamagedVersionNamed, SaveWholeOrNothing, CSVDataset):
    """pandas.CSVDataset, saves whole or nothing, that reads back its own run's version (`OwnRunVersion`)."""


class TrialModels:
    """The model files listed by one manifest: ``models.load(setting, trial)``."""

    def __init__(self, directory: Path, manifest: dict, manifest_path: str):
        self.directory = Path(directory)
        self.manifest = manifest
        self.manifest_path = manifest_path
        self._keys = {(row["setting"], row["trial"]): row["key"] for row in manifest["trials"]}

    def keys(self):
        return self._keys.keys()

    def load(self, setting: int, trial: int) -> StoredTrial:
        if (setting, trial) not in self._keys:
            raise DatasetError(f"{self.manifest_path} lists no models for setting {setting}, trial {trial}; rerun "
                               "the training stage")
        key = self._keys[(setting, trial)]
        stored = TrialStore(self.directory).load(key)
        if stored is None:
            raise DatasetError(f"the models of setting {setting}, trial {trial} listed in {self.manifest_path} are "
                               f"missing or unreadable at {self.directory / (key + '.pkl')}; rerun the training stage")
        return stored


def _index_directory(method_index: str | dict[str, str]) -> Path:
    """The method index's folder: {"path": ...} (made absolute by Kedro) or an absolute string."""
    path = method_index.get("path") if isinstance(method_index, dict) else method_index
    if not isinstance(path, str) or (isinstance(method_index, dict) and set(method_index) != {"path"}):
        raise DatasetError(f"method_index must be {{path: <folder>}}; got {method_index!r}")
    if not Path(path).is_absolute():
        raise DatasetError(f"method_index {path!r} is a relative path outside a 'path' entry, so it would be "
                           f"resolved against the working directory ({Path.cwd()}), not the project; write it as "
                           f"method_index: {{path: {path}}}")
    return Path(path)


class ModelTrainingDataset(OwnRunVersion, AbstractVersionedDataset[TrainingPlan, TrialModels]):
    """filepath: the manifest (e.g. data/06_models/fig1/models.json); model files go to
    ``trials/`` beside it. method_index: the folder of `MethodIndex` pointers shared by every
    experiment, as ``{path: data/06_models/method_index}`` (None: each trial trains all its
    methods). Kedro turns relative ``filepath`` and ``path`` entries into paths in the project,
    whatever the working directory; a bare string would not be, so a relative one is refused
    (from a notebook, or a session created for a project elsewhere, the pointers would land
    under the working directory and point runs of one project at another project's files)."""

    def __init__(self, filepath: str, version: Version | None = None, metadata: dict[str, Any] | None = None,
                 method_index: str | dict[str, str] | None = None):
        super().__init__(PurePosixPath(filepath), version)
        self._trials = Path(filepath).parent / "trials"
        self._method_index = MethodIndex(_index_directory(method_index)) if method_index else None
        self.metadata = metadata

    def _describe(self) -> dict[str, Any]:
        return {"filepath": str(self._filepath), "trials": str(self._trials), "version": self._version,
                "method_index": str(self._method_index.directory) if self._method_index else None}

    def save(self, data: TrainingPlan) -> None:
        """Train what the plan's stored trials and the method index do not already hold, writing
        each trial as it finishes, then this version's manifest."""
        store = TrialStore(self._trials, data.min_free_bytes)
        store.directory.mkdir(parents=True, exist_ok=True)
        store.remove_stale_temporaries()
        index = self._method_index
        missing, finished_by = [], {}  # finished cell -> what trained it (the models themselves are not kept)
        for cell, key in data.keys.items():
            stored = store.load(key) if data.resume else None
            if stored is None:
                missing.append(cell)
            else:
                finished_by[cell] = trained_by(stored.methods.values())
                log.debug("%s: reusing finished trial (setting %d, trial %d) from %s, %s", data.name, *cell,
                          store.path(key), finished_by[cell])
                if index is not None:
                    index.record(data.method_keys.get(cell, {}), store.path(key))
        if finished_by:  # one line per figure; the trials one by one at debug level (the log file)
            log.info("%s: reusing finished trial%s: %d of %d, from %s, %s", data.name,
                     "s" if len(finished_by) > 1 else "", len(finished_by), len(data.keys), store.directory,
                     "; ".join(sorted(set(finished_by.values()))))
        reused = {}
        if index is not None and (data.resume or data.trained_since is not None):
            for cell in missing:
                found = index.find(data.method_keys.get(cell, {}), data.data_keys.get(cell), data.trained_since)
                if found:
                    reused[cell] = found
                    sources = sorted({str(path) for _, path in found.values()})
                    log.debug("%s: setting %d, trial %d: reusing %s, trained on the same data, from %s, %s",
                              data.name, *cell, ", ".join(found), ", ".join(sources),
                              trained_by(m for m, _ in found.values()))
        if reused:
            methods = list(dict.fromkeys(label for found in reused.values() for label in found))  # configured order
            folders = sorted({str(Path(path).parent) for found in reused.values() for _, path in found.values()})
            log.info("%s: reusing %s, trained on the same data, from %s, in %d of %d trials, %s", data.name,
                     ", ".join(methods), ", ".join(folders), len(reused), len(data.keys),
                     trained_by(m for found in reused.values() for m, _ in found.values()))
        try:
            for stored in data.train(missing, reused):
                path = store.save(stored)
                if index is not None:
                    index.record(data.method_keys.get((stored.setting, stored.trial), {}), path)
        except DatasetError:
            raise
        except Exception as error:  # Kedro would say "Failed while saving data": the training failed
            raise DatasetError(f"training the models of {data.name} failed ({type(error).__name__}): {error}") from error
        manifest = {"experiment": data.name, "keep_models": data.keep_models, "trials": [
            {"setting": s, "trial": t, "key": key, "file": f"trials/{key}.pkl"} for (s, t), key in data.keys.items()]}
        path = Path(self._get_save_path())
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, json.dumps(manifest, indent=1))

    def load(self) -> TrialModels:
        path = Path(self._get_load_path())
        try:
            manifest = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise DatasetError(f"cannot read the models manifest {path}: {exc}; rerun the training stage") from exc
        return TrialModels(self._trials, manifest, str(path))

    def _exists(self) -> bool:
        try:
            return Path(self._get_load_path()).exists()
        except DatasetError:
            return False


# kedro-viz sanitizes an HTML preview (which turns entities back into characters) and then marks
# it up with regular expressions (its `html-renderer`): `_x_` and `*x*` become italics anywhere
# on a line, before code spans are looked at (`shortest_path ... n_train` came out as
# "shortest<em>path ... n</em>train"). Those expressions do not cross a line break, and a line
# break in a hidden element is not shown: one follows every such character.
VIZ_EMPHASIS = ("_", "*")
VIZ_SEPARATOR = '<span style="display:none">\n</span>'


class MarkdownDataset(DamagedVersionNamed, SaveWholeOrNothing, TextDataset):
    """A text dataset whose kedro-viz preview is the whole markdown file, its headings, pipe
    tables and code spans marked up by kedro-viz, underscores and asterisks shown as written
    (not as italics)."""

    def preview(self) -> HTMLPreview:
        # No wrapping element: kedro-viz's heading rule wants "# " at a line's start, and the
        # file's first line would follow the element's tag (in a <pre> it stayed "# Figure 1").
        text = html.escape(self.load())
        for character in VIZ_EMPHASIS:
            text = text.replace(character, character + VIZ_SEPARATOR)
        return HTMLPreview(text)
