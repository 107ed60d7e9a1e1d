"""Writing files back into the project: checked first, then all of them or none.

nestor's own process writes the project here, from contents read out of the shadow repository;
git never writes into the project. :func:`problems` says why a set of targets cannot be written
(nothing is touched); :func:`apply` stages every new content in a private folder at the project's
root, moves each current file aside, puts the new one in place, and on any failure moves every
file back, so the project is left as it was.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

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


def problems(root: Path, targets: Mapping[str, Target], max_file_bytes: int) -> list[str]:
    """Why ``targets`` cannot all be written in ``root`` (one line each); empty when they can."""
    found: list[str] = []
    absent = {path for path, target in targets.items() if target.kind == "absent"}
    for path, target in sorted(targets.items()):
        parts = PurePosixPath(path).parts
        if not parts or PurePosixPath(path).is_absolute() or ".." in parts:
            found.append(f"{path}: not a path inside the project")
            continue
        blocking = _non_folder_parent(root, path)
        if blocking is not None:
            if blocking not in absent:
                kind = "a link" if stat.S_ISLNK(_mode(root / blocking) or 0) else "a file"
                found.append(f"{path}: {blocking} is {kind} now")
            continue  # else it goes with its deleted parent, and nothing is there yet
        found += _problems_at(root, path, target, absent, max_file_bytes)
    return found


def _non_folder_parent(root: Path, path: str) -> str | None:
    """The first folder of ``path`` that is a file or a link now (writing through it would escape)."""
    parts = PurePosixPath(path).parts
    for depth in range(1, len(parts)):
        parent = "/".join(parts[:depth])
        mode = _mode(root / parent)
        if mode is None:
            return None
        if not stat.S_ISDIR(mode):
            return parent
    return None


def _problems_at(root: Path, path: str, target: Target, absent: set[str], max_file_bytes: int) -> list[str]:
    full = root / path
    mode = _mode(full)
    if mode is None:
        return []
    if stat.S_ISDIR(mode):
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
    if full.stat().st_size > max_file_bytes:
        return [f"{path}: it is over the size limit, so no snapshot holds it: nestor will not overwrite it"]
    return []


def apply(
    root: Path, targets: Mapping[str, Target], *, replace: Callable[[str, str], None] = os.replace
) -> None:
    """Write every target, or none: on any failure the project is put back as it was.

    ``replace`` moves a file into place (a test passes one that fails).

    Raises:
        CheckpointError: A file could not be written; nothing was changed.

    """
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=root))
    undo: list[Callable[[], None]] = []
    current = ""
    try:
        staged = _stage(staging, targets.values())
        backups = staging / "backup"
        backups.mkdir()
        deletions = sorted((t.path for t in targets.values() if t.kind == "absent"), key=_depth, reverse=True)
        for path in deletions:
            current = path
            # Below a file or a link that is deleted itself (checked by problems()): nothing to do.
            if _non_folder_parent(root, path) is None and os.path.lexists(root / path):
                _move_aside(root / path, backups, undo, replace)
        for path in deletions:
            _remove_empty_parents(root, path, undo)
        for path in sorted((t.path for t in targets.values() if t.kind != "absent"), key=_depth):
            current = path
            full = root / path
            _make_parents(root, full.parent, undo)
            if os.path.lexists(full):
                if full.is_dir() and not full.is_symlink():
                    _remove_empty_tree(full, undo)
                else:
                    _move_aside(full, backups, undo, replace)
            replace(str(staged[path]), str(full))
            undo.append(lambda full=full: full.unlink())
    except OSError as error:
        failures = _roll_back(undo)
        shutil.rmtree(staging, ignore_errors=True)
        left = f"; {len(failures)} files could not be put back: {', '.join(failures[:5])}" if failures else ""
        raise CheckpointError(
            f"could not restore {current or 'the files'}: {error.strerror or error}; "
            + ("nothing was changed" if not failures else "the project may be partly restored" + left),
            hint="fix the cause (permissions, free space) and undo again",
        ) from error
    shutil.rmtree(staging, ignore_errors=True)


def _stage(staging: Path, targets: Iterable[Target]) -> dict[str, Path]:
    """Every new file and link written into ``staging`` first, with its mode."""
    staged: dict[str, Path] = {}
    for number, target in enumerate(targets):
        if target.kind == "absent":
            continue
        place = staging / str(number)
        if target.kind == "link":
            os.symlink(os.fsdecode(target.data), place)
        else:
            place.write_bytes(target.data)
            place.chmod(0o755 if target.executable else 0o644)
        staged[target.path] = place
    return staged


def _move_aside(
    path: Path, backups: Path, undo: list[Callable[[], None]], replace: Callable[[str, str], None]
) -> None:
    backup = backups / str(len(undo))
    replace(str(path), str(backup))
    undo.append(lambda: replace(str(backup), str(path)))


def _remove_empty_parents(root: Path, path: str, undo: list[Callable[[], None]]) -> None:
    """Remove the folders a deletion left empty, up to the project's root."""
    folder = (root / path).parent
    while folder != root and folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
        folder.rmdir()
        undo.append(lambda folder=folder: folder.mkdir())
        folder = folder.parent


def _remove_empty_tree(folder: Path, undo: list[Callable[[], None]]) -> None:
    """Remove a folder whose files were all moved aside (its empty sub-folders too)."""
    for current, dirs, _names in os.walk(folder, topdown=False):
        for name in dirs:
            (Path(current) / name).rmdir()
            undo.append(lambda path=Path(current) / name: path.mkdir())
    folder.rmdir()
    undo.append(lambda: folder.mkdir())


def _make_parents(root: Path, folder: Path, undo: list[Callable[[], None]]) -> None:
    missing: list[Path] = []
    while folder != root and not os.path.lexists(folder):
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir()
        undo.append(lambda path=path: path.rmdir())


def _roll_back(undo: list[Callable[[], None]]) -> list[str]:
    failures: list[str] = []
    for step in reversed(undo):
        try:
            step()
        except OSError as error:
            failures.append(str(error.filename or error))
    return failures


def _mode(path: Path) -> int | None:
    with contextlib.suppress(OSError):
        return path.lstat().st_mode
    return None


def _depth(path: str) -> int:
    return path.count("/")
