"""Hard links: a file another name of which a deny or ask rule covers is covered too.

``ln secrets/key.txt k`` makes ``k`` the same file as ``secrets/key.txt``, which no path rule sees:
a file is the inode ``(st_dev, st_ino)``, so a rule covers every name of the inodes of the files
its pattern matches. A file with one name (``st_nlink == 1``, the common case) costs one ``stat``.
A file with more is looked up among the inodes of the files the rule's pattern matches, found by
walking the directory under which they all lie (:func:`~nestor.permissions.paths.pattern_base`)
once, and kept per rule.

Keeping them is safe because a name is added to, removed from or moved to a directory only by
``link``, ``unlink`` or ``rename``, each of which sets the inode's ``st_ctime`` to the present: a
file whose ``st_ctime`` is older than the last walk kept its names since (a directory renamed into
the pattern's tree does not change the ctime of the files in it, but their contents were readable
under their old names before). A newer file makes the walk run again, which re-reads only the
directories whose ``st_mtime`` changed. A tree too large to walk (more than
:data:`MAX_ENTRIES` entries) covers every file with several names: a rule is not given up.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nestor.permissions.paths import is_bare, path_matches, pattern_base

if TYPE_CHECKING:
    from nestor.permissions.rules import Rule

MAX_ENTRIES = 200_000
# Timestamps lag the clock: by a kernel tick where they have nanoseconds, by up to two seconds on
# file systems that keep whole seconds (or two). A time this close to a walk's start may be after it.
_FINE_MARGIN_NS = 50_000_000
_COARSE_MARGIN_NS = 2_000_000_000

Inode = tuple[int, int]


def linked_rule(
    candidates: Sequence[Rule], target: str, project_root: str, *, max_entries: int = MAX_ENTRIES
) -> Rule | None:
    """The first of ``candidates`` (deny or ask rules) covering another name of the file ``target``.

    ``max_entries`` bounds each rule's walk (beyond it, every file with several names is covered).
    """
    patterned = [rule for rule in candidates if not is_bare(rule.pattern)]
    if not patterned:
        return None
    try:
        info = os.stat(target)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_nlink <= 1:
        return None
    return next(
        (rule for rule in patterned if _index(rule.pattern or "", project_root, max_entries).covers(info)),
        None,
    )


_INDEXES: dict[tuple[str, str, int], _PatternInodes] = {}
_INDEXES_LOCK = threading.Lock()


def _index(pattern: str, project_root: str, max_entries: int) -> _PatternInodes:
    key = (pattern, project_root, max_entries)
    with _INDEXES_LOCK:
        index = _INDEXES.get(key)
        if index is None:
            index = _INDEXES[key] = _PatternInodes(pattern, project_root, max_entries)
        return index


@dataclass(slots=True)
class _Directory:
    """A directory as last read: its mtime, the inodes of the files the pattern covers, its subdirectories."""

    mtime_ns: int
    read_ns: int
    inodes: frozenset[Inode]
    subdirectories: tuple[str, ...]


@dataclass
class _PatternInodes:
    """The inodes of the files one pattern covers, walked lazily and read again when needed."""

    pattern: str
    project_root: str
    max_entries: int
    walked_ns: int = -1
    complete: bool = True
    inodes: frozenset[Inode] = frozenset()
    _directories: dict[str, _Directory] = field(default_factory=dict[str, _Directory])
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def covers(self, info: os.stat_result) -> bool:
        """True when the file ``info`` describes is one the pattern covers, under any of its names."""
        inode = (info.st_dev, info.st_ino)
        with self._lock:
            if self.walked_ns < 0 or info.st_ctime_ns >= self.walked_ns - _margin(info.st_ctime_ns):
                self._walk()
            return inode in self.inodes or not self.complete

    def _walk(self) -> None:
        started = time.time_ns()
        base = pattern_base(self.pattern, self.project_root)
        found: set[Inode] = set()
        seen: dict[str, _Directory] = {}
        budget = [self.max_entries]
        try:
            info = os.lstat(base)
        except OSError:
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode):
            self._read_tree(base, started, found, seen, budget)
        elif info is not None and stat.S_ISREG(info.st_mode) and self._matches(base):
            found.add((info.st_dev, info.st_ino))
        self._directories = seen
        self.inodes = frozenset(found)
        self.complete = budget[0] >= 0
        self.walked_ns = started

    def _read_tree(
        self, top: str, started: int, found: set[Inode], seen: dict[str, _Directory], budget: list[int]
    ) -> None:
        stack = [top]
        while stack and budget[0] >= 0:
            path = stack.pop()
            try:
                mtime_ns = os.stat(path).st_mtime_ns
            except OSError:
                continue
            known = self._directories.get(path)
            # A directory read within the margin of its own mtime may have changed since: read again.
            if known is None or known.mtime_ns != mtime_ns or known.read_ns - _margin(mtime_ns) <= mtime_ns:
                known = self._read_directory(path, mtime_ns, started, budget)
            seen[path] = known
            found.update(known.inodes)
            stack.extend(known.subdirectories)

    def _read_directory(self, path: str, mtime_ns: int, started: int, budget: list[int]) -> _Directory:
        inodes: set[Inode] = set()
        subdirectories: list[str] = []
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    budget[0] -= 1
                    if entry.is_dir(follow_symlinks=False):
                        subdirectories.append(entry.path)
                    elif entry.is_file(follow_symlinks=False) and self._matches(entry.path):
                        info = entry.stat(follow_symlinks=False)
                        inodes.add((info.st_dev, info.st_ino))
        except OSError:
            pass
        return _Directory(mtime_ns, started, frozenset(inodes), tuple(subdirectories))

    def _matches(self, path: str) -> bool:
        return path_matches(
            self.pattern, path, self.project_root, bare_covers_outside=True, target_is_real=True
        )


def _margin(timestamp_ns: int) -> int:
    """How far ``timestamp_ns`` may lag the moment it records: whole seconds mean a coarse file system."""
    return _COARSE_MARGIN_NS if timestamp_ns % 1_000_000_000 == 0 else _FINE_MARGIN_NS
