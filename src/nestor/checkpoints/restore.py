"""Writing files back into the project: checked first, then all of them or none.

nestor's own process writes the project here, from contents read out of the shadow repository;
git never writes into the project. :func:`problems` says why a set of targets cannot be written
(nothing is touched); :func:`apply` stages every new content in a private folder at the project's
root, moves each current file aside, puts the new one in place, and on any failure moves every
file back, so the project is left as it was. Every step goes through a :class:`ProjectTree`, so
no file is read or written through a folder that is a link now, even one a command links while
the undo runs.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from nestor.checkpoints.project_tree import ProjectTree
from nestor.core.errors import CheckpointError

STAGING_PREFIX = ".nestor-undo-"
"""The private folder an undo stages files in, at the project's root, removed when it ends."""

TargetKind = Literal["file", "link", "absent"]


@dataclass(frozen=True, slots=True)
class Target:
    """What one file must become.

    Attributes:
        path: The file, relative to the project (``/``-separated).
        kind: A regular file, a symbolic link, or no file at all.
        data: The file's content, or the link's target.
        executable: Whether the file is executable.

    """

    path: str
    kind: TargetKind
    data: bytes = b""
    executable: bool = False


def problems(tree: ProjectTree, root: Path, targets: Mapping[str, Target], max_file_bytes: int) -> list[str]:
    """Why ``targets`` cannot all be written in ``root`` (one line each); empty when they can."""
    found: list[str] = []
    absent = {path for path, target in targets.items() if target.kind == "absent"}
    for path in sorted(targets):
        parts = PurePosixPath(path).parts
        if not parts or PurePosixPath(path).is_absolute() or ".." in parts or "." in parts:
            found.append(f"{path}: not a path inside the project")
            continue
        blocking = _non_folder_parent(tree, path)
        if blocking is not None:
            if blocking not in absent:
                kind = "a link" if stat.S_ISLNK(_mode(tree, blocking) or 0) else "a file"
                found.append(f"{path}: {blocking} is {kind} now")
            continue  # else it goes with its deleted parent, and nothing is there yet
        found += _problems_at(tree, root, path, absent, max_file_bytes)
    return found


def _non_folder_parent(tree: ProjectTree, path: str) -> str | None:
    """The first folder of ``path`` that is a file or a link now (writing through it would escape)."""
    parts = PurePosixPath(path).parts
    for depth in range(1, len(parts)):
        parent = "/".join(parts[:depth])
        mode = _mode(tree, parent)
        if mode is None:
            return None
        if not stat.S_ISDIR(mode):
            return parent
    return None


def _problems_at(
    tree: ProjectTree, root: Path, path: str, absent: set[str], max_file_bytes: int
) -> list[str]:
    status = tree.lstat(path)
    if status is None:
        return []
    mode = status.st_mode
    if stat.S_ISDIR(mode):
        full = root / path
        inside = [
            Path(folder, name).relative_to(root).as_posix()
            for folder, dirs, names in os.walk(full)
            for name in [*names, *(name for name in dirs if Path(folder, name).is_symlink())]
        ]
        if all(name in absent for name in inside):
            return []
        return [f"{path}: a folder is there now, with files nestor did not snapshot"]
    if stat.S_ISLNK(mode):
        return []
    if not stat.S_ISREG(mode):
        return [f"{path}: not a regular file now"]
    if mode & 0o222 == 0:
        return [f"{path}: it is read-only (make it writable to restore it)"]
    if status.st_size > max_file_bytes:
        return [f"{path}: it is over the size limit, so no snapshot holds it: nestor will not overwrite it"]
    return []


def apply(tree: ProjectTree, targets: Mapping[str, Target]) -> None:
    """Write every target, or none: on any failure the project is put back as it was.

    Raises:
        CheckpointError: A file could not be written; nothing was changed.

    """
    staging = STAGING_PREFIX + secrets.token_hex(6)
    tree.mkdir(staging, 0o700)
    undo: list[Callable[[], None]] = []
    current = ""
    try:
        staged = _stage(tree, staging, targets.values())
        backups = f"{staging}/backup"
        tree.mkdir(backups)
        deletions = sorted((t.path for t in targets.values() if t.kind == "absent"), key=_depth, reverse=True)
        for path in deletions:
            current = path
            # Below a file or a link that is deleted itself (checked by problems()): nothing to do.
            if _non_folder_parent(tree, path) is None and tree.lstat(path) is not None:
                _move_aside(tree, path, backups, undo)
        for path in deletions:
            _remove_empty_parents(tree, path, undo)
        for path in sorted((t.path for t in targets.values() if t.kind != "absent"), key=_depth):
            current = path
            _make_parents(tree, path, undo)
            status = tree.lstat(path)
            if status is not None:
                if stat.S_ISDIR(status.st_mode):
                    _remove_empty_tree(tree, path, undo)
                else:
                    _move_aside(tree, path, backups, undo)
            tree.rename(staged[path], path)
            undo.append(lambda path=path: tree.unlink(path))
    except OSError as error:
        failures = _roll_back(undo)
        tree.remove_tree(staging)
        left = f"; {len(failures)} files could not be put back: {', '.join(failures[:5])}" if failures else ""
        raise CheckpointError(
            f"could not restore {current or 'the files'}: {error.strerror or error}; "
            + ("nothing was changed" if not failures else "the project may be partly restored" + left),
            hint="fix the cause (permissions, free space, a command changing the folder) and undo again",
        ) from error
    tree.remove_tree(staging)


def _stage(tree: ProjectTree, staging: str, targets: Iterable[Target]) -> dict[str, str]:
    """Every new file and link written into ``staging`` first, with its mode."""
    staged: dict[str, str] = {}
    for number, target in enumerate(targets):
        if target.kind == "absent":
            continue
        place = f"{staging}/{number}"
        if target.kind == "link":
            tree.symlink(os.fsdecode(target.data), place)
        else:
            tree.write_new(place, target.data, 0o755 if target.executable else 0o644)
        staged[target.path] = place
    return staged


def _move_aside(tree: ProjectTree, path: str, backups: str, undo: list[Callable[[], None]]) -> None:
    backup = f"{backups}/{len(undo)}"
    tree.rename(path, backup)
    undo.append(lambda: tree.rename(backup, path))


def _remove_empty_parents(tree: ProjectTree, path: str, undo: list[Callable[[], None]]) -> None:
    """Remove the folders a deletion left empty, up to the project's root."""
    folder = _parent(path)
    while folder and stat.S_ISDIR(_mode(tree, folder) or 0) and not tree.listdir(folder):
        tree.rmdir(folder)
        undo.append(lambda folder=folder: tree.mkdir(folder))
        folder = _parent(folder)


def _remove_empty_tree(tree: ProjectTree, folder: str, undo: list[Callable[[], None]]) -> None:
    """Remove a folder whose files were all moved aside (its empty sub-folders too)."""
    for name in tree.listdir(folder):
        _remove_empty_tree(tree, f"{folder}/{name}", undo)  # a file left there fails its rmdir
    tree.rmdir(folder)
    undo.append(lambda: tree.mkdir(folder))


def _make_parents(tree: ProjectTree, path: str, undo: list[Callable[[], None]]) -> None:
    parts = PurePosixPath(path).parts
    for depth in range(1, len(parts)):
        folder = "/".join(parts[:depth])
        if tree.lstat(folder) is None:
            tree.mkdir(folder)
            undo.append(lambda folder=folder: tree.rmdir(folder))


def _roll_back(undo: list[Callable[[], None]]) -> list[str]:
    failures: list[str] = []
    for step in reversed(undo):
        try:
            step()
        except OSError as error:
            failures.append(str(error.filename or error))
    return failures


def _mode(tree: ProjectTree, path: str) -> int | None:
    status = tree.lstat(path)
    return status.st_mode if status is not None else None


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


def _depth(path: str) -> int:
    return path.count("/")
