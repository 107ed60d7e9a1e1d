"""Matching file rules against paths.

A pattern is relative to the project root unless it is absolute (``/etc/*``, or Claude Code's
``//etc/*``) or starts with ``~/`` (the home directory); ``./`` in front is ignored, ``../``
leads out of the project, and a trailing ``/`` means everything in that directory. The path is
resolved first (``os.path.realpath``), so a symlink in the project is judged by where it points:
``edit(*.txt)`` does not cover ``notes.txt -> ~/.bashrc``. ``*`` crosses ``/`` (``src/*`` covers
the tree), and ``dir/**`` covers ``dir`` itself too.
"""

from __future__ import annotations

import os
import re
from fnmatch import fnmatchcase
from functools import lru_cache

_ANY = frozenset({"", "*", "**"})
_GLOB_CHARACTERS = frozenset("*?[")


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
