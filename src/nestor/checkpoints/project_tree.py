"""The project's files as an undo reads and changes them: never through a link.

An undo runs in nestor's own process, outside the sandbox, while a command (a background agent's,
or one that outlived its call) may still rename folders and plant links. Every operation here goes
through folder descriptors opened from the project's root without following a link
(:func:`~nestor.core.files.open_no_links`): a folder that is a link now is never entered, so
nothing is read or written outside the project, and the operation fails instead
(:class:`~nestor.core.files.LinkInPathError`, an ``OSError``).

Paths are relative to the project and ``/``-separated.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Literal

from nestor.core.files import DIRECTORY_FLAGS, open_no_links

FileKind = Literal["file", "link", "other"]
FileState = tuple[FileKind, bytes, bool]
"""What a path holds: its kind, its content (a link's target), whether it is executable."""


class ProjectTree:
    """The files below ``root``, reached through descriptors only; close it (or use ``with``).

    Args:
        root: The project's root, a resolved path.

    """

    def __init__(self, root: Path) -> None:
        self._root = open_no_links(root, DIRECTORY_FLAGS)

    def __enter__(self) -> ProjectTree:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Let go of the root's descriptor."""
        if self._root >= 0:
            os.close(self._root)
            self._root = -1

    @contextlib.contextmanager
    def _parent(self, path: str) -> Iterator[tuple[int, str]]:
        """The descriptor of the folder holding ``path``, and its name there."""
        parts = PurePosixPath(path).parts
        if not parts:
            raise ValueError("the project's root has no parent folder here")
        if len(parts) == 1:
            yield self._root, parts[0]
            return
        folder = open_no_links(PurePosixPath(*parts[:-1]), DIRECTORY_FLAGS, dir_fd=self._root)
        try:
            yield folder, parts[-1]
        finally:
            os.close(folder)

    def lstat(self, path: str) -> os.stat_result | None:
        """What ``path`` is (a link is not followed); None when missing or behind a file or a link."""
        try:
            with self._parent(path) as (folder, name):
                return os.stat(name, dir_fd=folder, follow_symlinks=False)
        except OSError:
            return None

    def state(self, path: str) -> FileState | None:
        """What ``path`` holds now (read without following a link); None when nothing is there."""
        status = self.lstat(path)
        if status is None:
            return None
        try:
            if stat.S_ISLNK(status.st_mode):
                with self._parent(path) as (folder, name):
                    return ("link", os.fsencode(os.readlink(name, dir_fd=folder)), False)
            if stat.S_ISREG(status.st_mode):
                return ("file", self._read(path), bool(status.st_mode & 0o100))
        except OSError:
            return None
        return ("other", b"", False)

    def _read(self, path: str) -> bytes:
        flags = os.O_RDONLY | os.O_NONBLOCK  # a FIFO swapped in is opened, then refused by fstat
        with os.fdopen(open_no_links(PurePosixPath(path), flags, dir_fd=self._root), "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise OSError(f"{path} is no longer a regular file")
            return file.read()

    def listdir(self, path: str) -> list[str]:
        """The names in the folder ``path``."""
        folder = open_no_links(PurePosixPath(path), os.O_RDONLY | os.O_DIRECTORY, dir_fd=self._root)
        try:
            return os.listdir(folder)
        finally:
            os.close(folder)

    def mkdir(self, path: str, mode: int = 0o777) -> None:
        """Make the folder ``path`` (its parent must be there)."""
        with self._parent(path) as (folder, name):
            os.mkdir(name, mode, dir_fd=folder)

    def rmdir(self, path: str) -> None:
        """Remove the empty folder ``path``."""
        with self._parent(path) as (folder, name):
            os.rmdir(name, dir_fd=folder)

    def unlink(self, path: str) -> None:
        """Remove the file or link ``path``."""
        with self._parent(path) as (folder, name):
            os.unlink(name, dir_fd=folder)

    def rename(self, source: str, target: str) -> None:
        """Move ``source`` to ``target`` (replacing a file there)."""
        with self._parent(source) as (source_folder, source_name), self._parent(target) as (folder, name):
            os.rename(source_name, name, src_dir_fd=source_folder, dst_dir_fd=folder)

    def symlink(self, target: str, path: str) -> None:
        """Make ``path`` a link to ``target``."""
        with self._parent(path) as (folder, name):
            os.symlink(target, name, dir_fd=folder)

    def write_new(self, path: str, data: bytes, mode: int) -> None:
        """Write a new file ``path`` (never an existing one) holding ``data``, with ``mode``."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        with os.fdopen(open_no_links(PurePosixPath(path), flags, 0o600, dir_fd=self._root), "wb") as file:
            file.write(data)
            os.fchmod(file.fileno(), mode)

    def remove_tree(self, path: str) -> None:
        """Remove the folder ``path`` and all it holds, as far as it can (links are not followed)."""
        with contextlib.suppress(OSError), self._parent(path) as (folder, name):
            shutil.rmtree(name, ignore_errors=True, dir_fd=folder)
