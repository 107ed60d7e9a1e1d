"""Where a repository lives, found as git finds it, by reading files and never running git.

Everything here is read from the repository itself (``.git`` files, ``commondir``, ``HEAD``, refs),
so it is a stranger's input: it says where data lies, and nothing read here is ever run or used as
configuration. A ``commondir`` pointing at ``/tmp/evil`` only moves where objects and refs are
read from.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

GIT_DIR_NAME = ".git"
_MAX_POINTER_BYTES = 4096
_MAX_PACKED_REFS_BYTES = 32 * 1024 * 1024
_MAX_SYMREF_DEPTH = 5
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# Refs that live in each worktree's own git dir rather than in the common dir (git's rule).
_PER_WORKTREE_REFS = ("refs/bisect/", "refs/worktree/", "refs/rewritten/")


@dataclass(frozen=True, slots=True)
class Head:
    """What ``HEAD`` names.

    Attributes:
        ref: The branch ref (``refs/heads/main``), None when detached or unreadable.
        commit: The commit id it resolves to, None when the branch has no commit yet.

    """

    ref: str | None
    commit: str | None

    @property
    def branch(self) -> str | None:
        """The branch's short name (``main``), None when detached."""
        if self.ref is None:
            return None
        return self.ref.removeprefix("refs/heads/")

    def describe(self) -> str:
        """One phrase for a prompt: ``main``, ``main (no commits yet)``, ``detached at 1a2b3c4``."""
        if self.ref is not None:
            return (self.branch or self.ref) if self.commit else f"{self.branch} (no commits yet)"
        return f"detached at {self.commit[:7]}" if self.commit else "(unknown)"


@dataclass(frozen=True, slots=True)
class Repository:
    """A repository's locations, as git would find them from a directory inside it.

    Attributes:
        work_tree: The top level of the work tree (the directory holding ``.git``).
        git_dir: The repository's git dir (``.git``, or the one a ``.git`` file names).
        common_dir: The directory holding its config, objects and shared refs: ``git_dir``
            itself, or what ``git_dir/commondir`` names (a linked worktree, a submodule).
        git_file: The ``.git`` file that pointed at ``git_dir``, None when ``.git`` is a directory.

    """

    work_tree: Path
    git_dir: Path
    common_dir: Path
    git_file: Path | None = None

    @property
    def index_file(self) -> Path:
        """The index of this work tree."""
        return self.git_dir / "index"

    @property
    def objects_dir(self) -> Path:
        """Where objects are stored."""
        return self.common_dir / "objects"

    def head(self) -> Head:
        """Read ``HEAD`` and resolve it through loose refs, then ``packed-refs``."""
        text = _read_pointer(self.git_dir / "HEAD")
        if text is None:
            return Head(None, None)
        if _OBJECT_ID.fullmatch(text):
            return Head(None, text)
        ref = _symref_target(text)
        if ref is None:
            return Head(None, None)
        return Head(ref, self._resolve(ref, _MAX_SYMREF_DEPTH))

    def resolve_name(self, name: str) -> str | None:
        """A ref's name as git's ``rev-parse`` reads it (``main``, ``v1.2``, ``refs/...``) to its object id.

        Tried in git's order: the name as given under ``refs/``, then ``refs/tags/``,
        ``refs/heads/``, ``refs/remotes/``; a full object id is returned as it is. None when no ref
        has the name (an abbreviated id is not resolved here: git's own objects decide that).
        """
        if _OBJECT_ID.fullmatch(name):
            return name
        for candidate in (name, f"refs/tags/{name}", f"refs/heads/{name}", f"refs/remotes/{name}"):
            if _valid_ref_name(candidate):
                found = self._resolve(candidate, _MAX_SYMREF_DEPTH)
                if found is not None:
                    return found
        return None

    def _resolve(self, ref: str, depth: int) -> str | None:
        base = self.git_dir if ref.startswith(_PER_WORKTREE_REFS) else self.common_dir
        loose = _read_pointer(base / ref)
        if loose is not None:
            if _OBJECT_ID.fullmatch(loose):
                return loose
            target = _symref_target(loose)
            return self._resolve(target, depth - 1) if target is not None and depth > 0 else None
        return _packed_ref(self.common_dir / "packed-refs", ref)


def find_repository(start: Path) -> Repository | None:
    """The repository ``start`` (a directory) lies in, looking upwards as git does; None if none.

    A ``.git`` directory (or a link to one) counts when it holds a ``HEAD`` file and an ``objects``
    directory (in its common dir), and the search goes on above one that does not; a ``.git``
    file counts when it names such a directory (``gitdir: PATH``), and one that does not ends the
    search, as git stops there too. The search also stops at a filesystem boundary.
    """
    for entry in git_entries(start):
        try:
            mode = entry.stat().st_mode  # a .git symlink counts, as git follows it
        except OSError:
            continue
        repository = _repository_at(entry.parent, entry, mode)
        if repository is not None or not stat.S_ISDIR(mode):
            return repository
    return None


def git_entries(start: Path) -> list[Path]:
    """Every ``.git`` entry (directory, file or link, valid or not) from ``start`` upwards.

    What git would look at, or will once a command fills it in: the sandbox keeps them all
    read-only. The walk stops at a filesystem boundary.
    """
    try:
        current = start.resolve()
        device = current.stat().st_dev
    except OSError:
        return []
    found: list[Path] = []
    while True:
        candidate = current / GIT_DIR_NAME
        if os.path.lexists(candidate):
            found.append(candidate)
        parent = current.parent
        try:
            if parent == current or parent.stat().st_dev != device:
                return found
        except OSError:
            return found
        current = parent


def _repository_at(work_tree: Path, entry: Path, mode: int) -> Repository | None:
    git_file: Path | None = None
    if stat.S_ISDIR(mode):
        git_dir = entry
    elif stat.S_ISREG(mode):
        git_dir = _linked_git_dir(entry)
        if git_dir is None:
            return None
        git_file = entry
    else:
        return None
    common_dir = common_dir_of(git_dir)
    if not (git_dir / "HEAD").is_file() or not (common_dir / "objects").is_dir():
        return None
    return Repository(work_tree, git_dir.resolve(), common_dir.resolve(), git_file)


def _linked_git_dir(git_file: Path) -> Path | None:
    """The directory a ``.git`` file names (``gitdir: PATH``, relative to the file), if any."""
    text = _read_pointer(git_file)
    if text is None or not text.startswith("gitdir:"):
        return None
    named = text.removeprefix("gitdir:").strip()
    linked = git_file.parent / named
    return linked if named and linked.is_dir() else None


def submodule_git_dirs(git_dir: Path) -> list[Path]:
    """The git dirs of a repository's submodules (``modules/NAME``, nested ones included)."""
    found: list[Path] = []
    pending = [git_dir / "modules"]
    while pending and len(found) < 1000:
        try:
            children = sorted(entry for entry in pending.pop().iterdir() if entry.is_dir())
        except OSError:
            continue
        for child in children:
            if (child / "HEAD").is_file():
                found.append(child)
                pending.append(child / "modules")
            else:  # a submodule named with a slash: modules/libs/json
                pending.append(child)
    return found


def common_dir_of(git_dir: Path) -> Path:
    """The common dir a git dir's ``commondir`` file names (relative to it), else the git dir."""
    named = _read_pointer(git_dir / "commondir")
    if not named:
        return git_dir
    common = git_dir / named
    return common if common.is_dir() else git_dir


def _symref_target(text: str) -> str | None:
    if not text.startswith("ref:"):
        return None
    ref = text.removeprefix("ref:").strip()
    return ref if _valid_ref_name(ref) else None


def _valid_ref_name(ref: str) -> bool:
    """A ref name that stays inside the refs hierarchy (no ``..``, no control characters)."""
    if not ref.startswith("refs/") or ref.endswith(("/", ".lock")) or "//" in ref:
        return False
    parts = ref.split("/")
    return all(part and not part.startswith(".") and ".." not in part for part in parts) and not any(
        ord(char) < 0x20 or char in " ~^:?*[\\\x7f" for char in ref
    )


def _read_pointer(path: Path) -> str | None:
    """The first line of a small regular file (a ref, ``HEAD``, ``commondir``), or None."""
    data = _read_regular(path, _MAX_POINTER_BYTES)
    if data is None:
        return None
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[0].strip() if lines else ""


def _packed_ref(packed_refs: Path, ref: str) -> str | None:
    data = _read_regular(packed_refs, _MAX_PACKED_REFS_BYTES)
    if data is None:
        return None
    wanted = ref.encode()
    for line in data.splitlines():
        object_id, _, name = line.partition(b" ")
        if name == wanted and _OBJECT_ID.fullmatch(object_id.decode("ascii", errors="replace")):
            return object_id.decode("ascii")
    return None


def _read_regular(path: Path, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of ``path`` if it is a regular file (not a link), else None.

    Opened non-blocking: a FIFO planted where a file is expected must not stall a start.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        remaining = limit
        while remaining > 0 and (chunk := os.read(fd, min(remaining, 1 << 20))):
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
