"""Matching file rules against paths.

A pattern is relative to the project root unless it is absolute (``/etc/*``, or Claude Code's
``//etc/*``) or starts with ``~/`` (the home directory); ``./`` in front is ignored, ``../``
leads out of the project, and a trailing ``/`` means everything in that directory. The path is
resolved first (``os.path.realpath``), so a symlink in the project is judged by where it points:
``edit(*.txt)`` does not cover ``notes.txt -> ~/.bashrc``. ``*`` crosses ``/`` (``src/*`` covers
the tree), and ``dir/**`` covers ``dir`` itself too.

A path a command opens is resolved by :func:`shell_independent_realpath`: one through a process's
own folder in ``/proc`` (``/proc/self/cwd``, ``/dev/fd/3/x``, a link to either) names what that
process has, which nestor's own process cannot know.
"""

from __future__ import annotations

import os
import re
import stat
from fnmatch import fnmatchcase
from functools import lru_cache

_ANY = frozenset({"", "*", "**"})
_GLOB_CHARACTERS = frozenset("*?[")
# A process's own folder (its cwd, root, descriptors, ...), and the names that lead there.
_PROCESS_FOLDER = re.compile(r"/proc/(?:self|thread-self|\d+)|/dev/(?:fd|stdin|stdout|stderr)")
_MAX_LINKS = 40  # as the kernel: a path through more links does not open


def is_bare(pattern: str | None) -> bool:
    """True for a rule without a real pattern (``write``, ``write(*)``)."""
    return pattern is None or pattern.strip() in _ANY


def path_matches(
    pattern: str | None,
    target: str,
    project_root: str,
    *,
    bare_covers_outside: bool,
    target_is_real: bool = False,
) -> bool:
    """Return True when ``pattern`` covers the file ``target``.

    A bare pattern covers the project, and everywhere else too when ``bare_covers_outside``: an
    allow rule ``write`` must not reach ``~/.bashrc``, a deny rule ``write`` forbids it all.
    ``target`` is resolved first unless ``target_is_real`` says it already is.
    """
    real = target if target_is_real else os.path.realpath(target)
    root = _real_root(project_root)
    relative = _relative(real, root)
    if pattern is None or is_bare(pattern):
        return relative is not None or bare_covers_outside
    written = _written(pattern, root)
    if os.path.isabs(written):
        return _glob_matches(real, _resolve_fixed_prefix(written))
    return relative is not None and _glob_matches(relative, written)


def shell_independent_realpath(path: str) -> str | None:
    """``os.path.realpath`` of the absolute ``path``, or None when what it names depends on the process.

    Resolving goes through links as the kernel does; a path that reaches a process's own folder in
    ``/proc`` (``/proc/self``, ``/proc/thread-self``, ``/proc/PID``, or ``/dev/fd``, ``/dev/stdin``
    ... which lead there) names that process's cwd, root or descriptors: in nestor's process, not
    in the shell that opens it (``cd src && cat < /proc/self/cwd/../.env``, ``3< .`` then
    ``/dev/fd/3/x``). Such a path, and one through too many links, is not known.
    """
    resolved = "/"
    pending = [part for part in reversed(path.split("/")) if part]
    links = 0
    while pending:
        part = pending.pop()
        if part == ".":
            continue
        if part == "..":
            resolved = os.path.dirname(resolved)
            continue
        candidate = os.path.join(resolved, part)
        if _PROCESS_FOLDER.fullmatch(candidate):
            return None
        try:
            is_link = stat.S_ISLNK(os.lstat(candidate).st_mode)
        except OSError:
            is_link = False  # a missing name is taken as written, as realpath does
        if not is_link:
            resolved = candidate
            continue
        links += 1
        try:
            target = os.readlink(candidate)
        except OSError:
            return None
        if links > _MAX_LINKS:
            return None
        if target.startswith("/"):
            resolved = "/"
        pending += [part for part in reversed(target.split("/")) if part]
    return resolved


def is_inside(real: str, project_root: str) -> bool:
    """True when the resolved path ``real`` is the project root or lies under it."""
    return _relative(real, _real_root(project_root)) is not None


def pattern_base(pattern: str, project_root: str) -> str:
    """The resolved path every file ``pattern`` (not bare) covers lies under, or is.

    ``secrets/**`` gives the project's ``secrets`` directory, ``~/.ssh/id_*`` the ``.ssh``
    directory, ``.env`` the project's ``.env`` itself, ``*.pem`` the project root.
    """
    root = _real_root(project_root)
    written = _written(pattern, root)
    absolute = written if os.path.isabs(written) else os.path.join(root, written)
    parts = absolute.split("/")
    fixed = 0
    while fixed < len(parts) and not _GLOB_CHARACTERS.intersection(parts[fixed]):
        fixed += 1
    if fixed == len(parts):
        return os.path.realpath(absolute)
    return os.path.realpath("/".join(parts[: max(fixed, 1)]) or "/")


def _written(pattern: str, root: str) -> str:
    """``pattern`` normalised: ``//x`` and ``~/x`` made absolute, ``./`` dropped, ``dir/`` its tree."""
    written = pattern.strip()
    if written.startswith("//"):
        written = written[1:]
    elif written == "~" or written.startswith("~/"):
        written = os.path.expanduser(written)
    while written.startswith("./"):
        written = written[2:]
    written = re.sub("/{2,}", "/", written)
    if written.endswith("/"):
        written += "**"  # "build/" is the directory: everything in it
    if not os.path.isabs(written) and ".." in written.split("/"):
        # "../shared/**" is relative to the project root too, and lies outside it.
        written = os.path.join(root, written)
    return written


@lru_cache(maxsize=32)
def _real_root(project_root: str) -> str:
    # One project root is judged against for every file a search finds: resolving it each time
    # was half the cost of a rule on a large tree. Roots are the user's folders, not repository
    # content, so they do not change under nestor while it runs.
    return os.path.realpath(project_root)


def _relative(real: str, root: str) -> str | None:
    if real == root:
        return ""
    prefix = root.rstrip("/") + "/"
    return real[len(prefix) :] if real.startswith(prefix) else None


def _glob_matches(path: str, pattern: str) -> bool:
    if fnmatchcase(path, pattern):
        return True
    return pattern.endswith("/**") and path == pattern[:-3]


def _resolve_fixed_prefix(pattern: str) -> str:
    """Resolve the directories before the first glob character, as the paths matched are resolved."""
    parts = pattern.split("/")
    fixed = 0
    while fixed < len(parts) - 1 and not _GLOB_CHARACTERS.intersection(parts[fixed]):
        fixed += 1
    head = "/".join(parts[:fixed]) or "/"
    resolved = os.path.realpath(head)
    rest = "/".join(parts[fixed:])
    return resolved.rstrip("/") + "/" + rest if rest else resolved
