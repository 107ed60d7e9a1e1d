"""What makes a redirection open another file than the one its path names when the line is judged.

A redirection's path is resolved when the line is judged (links followed, :mod:`.rules`), before
any of its commands runs, and the line itself can change what the path leads to:

- A directory change: ``cd``, ``pushd``, ``popd``, and the wrappers that run their command in
  another directory (``env -C``, ``sudo -D``, ``nsenter --wd``, ``unshare --wd``, ``pkexec``;
  their options are in :mod:`.bash_wrappers`). A relative path is then not known before the line
  runs.
- A root or mount change (``chroot``, ``sudo -R``, ``unshare --root``, ``nsenter --mount``), and
  a command whose job is to create, rename, copy, link, extract or remove files, or to mount them:
  ``ln -s .env innocent; echo x >> innocent`` writes ``.env``, and ``mv``, ``cp -s``, ``tar x``,
  ``git checkout`` (a repository's committed link), ``rm`` (a link removed, its name made anew)
  do as much. Every path is then not known before the line runs.

The whole line counts, not only what is written before a redirection: a loop runs its body again
after its last command, and the commands of a pipeline or a background job run together. A
program that makes links on its own (an interpreter, a build, a package manager) is what a
program does by itself, which no bash rule sees (SECURITY.md).
"""

from __future__ import annotations

from typing import Literal

from nestor.permissions.bash_git import git_subcommand
from nestor.permissions.bash_redirects import FileAccess, is_relative
from nestor.permissions.bash_words import Word

MovedPaths = Literal["", "relative", "all"]
"""Which paths of a line's redirections may lead elsewhere once it runs: none, relative ones, all."""

_DIRECTORY_CHANGERS = frozenset({"cd", "pushd", "popd"})
# Utilities, archivers, version control and mounts: their job is to make, move or remove names.
_NAME_CHANGERS = frozenset(
    {
        "ln",
        "link",
        "mv",
        "cp",
        "install",
        "rename",
        "rm",
        "unlink",
        "rmdir",
        "rsync",
        "tar",
        "bsdtar",
        "cpio",
        "pax",
        "unzip",
        "7z",
        "7za",
        "7zr",
        "unrar",
        "patch",
        "mount",
        "umount",
        "hg",
        "svn",
        "fossil",
        "bzr",
        "jj",
    }
)
# git subcommands that write nothing in the work tree (git checkout, stash, reset, ... create the
# links a repository holds).
_GIT_KEEPING_NAMES = frozenset(
    {
        "status",
        "diff",
        "log",
        "show",
        "blame",
        "annotate",
        "grep",
        "ls-files",
        "ls-tree",
        "ls-remote",
        "rev-parse",
        "rev-list",
        "describe",
        "shortlog",
        "cat-file",
        "show-ref",
        "for-each-ref",
        "name-rev",
        "whatchanged",
        "version",
        "help",
        "var",
        "count-objects",
        "fsck",
        "check-ignore",
        "check-attr",
        "check-mailmap",
        "check-ref-format",
        "diff-files",
        "diff-index",
        "diff-tree",
        "merge-base",
        "range-diff",
        "format-patch",
        "reflog",
        "branch",
        "tag",
        "remote",
        "config",
        "fetch",
        "push",
        "commit",
        "add",
        "init",
        "gc",
        "archive",
        "bundle",
        "notes",
        "verify-commit",
        "verify-tag",
        "cherry",
        "show-branch",
    }
)


def moved_paths(words: list[Word]) -> MovedPaths:
    """Which redirection paths the command ``words`` (unwrapped) may make lead elsewhere."""
    name = words[0].text if words else ""
    if name in _DIRECTORY_CHANGERS:
        return "relative"
    if name in _NAME_CHANGERS:
        return "all"
    if name == "git" and (subcommand := git_subcommand(words)) and subcommand not in _GIT_KEEPING_NAMES:
        return "all"
    return ""


def widest(first: MovedPaths, second: MovedPaths) -> MovedPaths:
    """The one of ``first`` and ``second`` that moves more paths."""
    order: tuple[MovedPaths, ...] = ("", "relative", "all")
    return first if order.index(first) >= order.index(second) else second


def unmoved(files: list[FileAccess], moved: MovedPaths) -> list[FileAccess]:
    """``files`` with the paths that ``moved`` says may lead elsewhere made unknown."""
    if not moved:
        return files
    return [
        FileAccess(None, access.action)
        if access.path is not None and (moved == "all" or is_relative(access.path))
        else access
        for access in files
    ]
