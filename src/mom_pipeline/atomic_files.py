"""Files written whole or not at all.

Every file the project saves is first written to a temporary file beside it (same folder, so
the same file system: ``.<name>.<writer's pid>.tmp``), flushed to the disk (fsync) and only
then renamed to its final name (`os.replace`, atomic on POSIX). A save that fails (a full
disk, an object that cannot be pickled) or a process killed mid-write leaves no file at the
final path: a reader, and Kedro's search for the newest version of a dataset (which looks
for ``<name>/<version>/<name>``), sees the previous complete file or nothing.

`write_atomically` writes bytes this way; `ReplacingLocalFileSystem` is the fsspec local file
system that kedro-datasets' classes write through (``self._fs.open``), with writes deferred
into temporaries and renamed into place when the save's fsspec transaction commits (see
`mom_pipeline.datasets.SaveWholeOrNothing`). A temporary whose writer is gone is named by
`is_stale_temporary`, so the clean-up (`mom_pipeline.data_cleanup`) can remove it.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from fsspec.implementations.local import LocalFileOpener, LocalFileSystem

TEMPORARY_SUFFIX = ".tmp"


def temporary_path(path: str | os.PathLike) -> Path:
    """Where the current process writes `path` before renaming it into place."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}{TEMPORARY_SUFFIX}")


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def is_temporary(path: Path) -> bool:
    """A temporary file of a writer (``.<name>.<pid>.tmp``)."""
    return path.name.startswith(".") and path.name.endswith(TEMPORARY_SUFFIX)


def is_stale_temporary(path: Path) -> bool:
    """A temporary file whose writer is no longer running."""
    if not is_temporary(path):
        return False
    try:
        pid = int(path.name.rsplit(".", 2)[-2])
    except ValueError:
        return True
    return not process_alive(pid)


def _fsync_folder(folder: Path) -> None:
    """Make a rename in `folder` durable; file systems that cannot sync a folder say EINVAL."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    except OSError as error:
        if error.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(descriptor)


def replace_atomically(temporary: Path, path: Path) -> None:
    """Flush the finished `temporary` to the disk, then rename it to `path` (removed on failure)."""
    try:
        descriptor = os.open(temporary, os.O_RDONLY)
        try:
            os.fsync(descriptor)  # the bytes are on the disk before the name says they are
        finally:
            os.close(descriptor)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _fsync_folder(Path(path).parent)


def write_atomically(path: str | os.PathLike, payload: bytes | str) -> Path:
    """Write `payload` to `path` whole or not at all (the folder must exist)."""
    path = Path(path)
    temporary = temporary_path(path)
    try:
        with open(temporary, "wb") as file:
            file.write(payload.encode() if isinstance(payload, str) else payload)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    replace_atomically(temporary, path)
    return path


class _ReplacedOnCommit(LocalFileOpener):
    """A local file opened for writing inside an fsspec transaction: written to its temporary
    beside the target, renamed into place on commit, removed on discard."""

    def _open(self):
        if self.autocommit or "w" not in self.mode:
            return super()._open()
        if self.f is None or self.f.closed:
            self.temp = str(temporary_path(self.path))
            self.f = open(self.temp, mode=self.mode)  # noqa: SIM115 - closed by commit or discard

    def commit(self):
        if not self.f.closed:
            self.f.close()
        replace_atomically(Path(self.temp), Path(self.path))

    def discard(self):
        if not self.f.closed:
            with contextlib.suppress(OSError):  # a full disk fails the final flush too
                self.f.close()
        Path(self.temp).unlink(missing_ok=True)


class ReplacingLocalFileSystem(LocalFileSystem):
    """fsspec's local file system whose writes in a transaction (``with fs.transaction:``)
    go to temporaries beside their targets and are renamed into place when it commits.

    fsspec's own deferred local writes go to the system's temporary folder (often another
    file system, where the final move is a copy that can itself be cut short) and are not
    synced to the disk. Not cached (fsspec would share one instance, and so one transaction,
    between datasets of a thread, also after unpickling in a ParallelRunner worker)."""

    cachable = False

    def _open(self, path, mode="rb", block_size=None, **kwargs):
        path = self._strip_protocol(path)
        if self.auto_mkdir and any(letter in mode for letter in "wxa"):
            self.makedirs(self._parent(path), exist_ok=True)
        return _ReplacedOnCommit(path, mode, fs=self, **kwargs)

    def invalidate_cache(self, path=None):
        """A local file system caches no listing (fsspec's default would collect the paths of
        every transaction for ever)."""
