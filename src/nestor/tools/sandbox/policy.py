"""What a sandboxed shell may touch: the policy, and the paths it resolves to for one project."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from nestor.tools.git.location import (
    GIT_DIR_NAME,
    Repository,
    find_repository,
    git_entries,
    submodule_git_dirs,
)

SandboxMode: TypeAlias = Literal["read-only", "workspace-write", "off"]

GIT_CONFIG_FILES = ("config", "config.worktree", "commondir", "hooks", "info")
"""What git reads in a git dir for its configuration, its commands and where its repository lies:
kept read-only when commands may otherwise write to ``.git`` (``writable_git``). Written by a
sandboxed command, a hook, a ``core.hooksPath``/``core.fsmonitor`` setting or a ``commondir``
naming another repository's config would run a command outside the sandbox at the user's next
``git``."""

_NAMES_GIT_DIR = re.compile(r"(?<![\w.-])\.git(?![\w.-])")

PLANTED_GIT_FILES = ("commondir", "config.worktree")
"""Files that, absent, a command could create in a writable git dir to point git at another
config: removed after the command where the sandbox cannot keep them from being created."""


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """What a command may write and whether it may use the network.

    Attributes:
        mode: ``read-only`` (nothing but a private temp dir is writable), ``workspace-write``
            (the project and the temp dirs are) or ``off`` (no sandbox).
        network: Whether the command may open network connections (``read-only`` never may).
        temp_dirs: The writable temp dirs of ``workspace-write``; None means ``/tmp`` and
            ``$TMPDIR``.
        kept_read_only: Directories that stay read-only even inside a writable path: nestor's
            data dir (its trusted folders) and the user config dir, when the project holds them.
        writable_git: Whether commands may change the git dirs of the repositories holding the
            project (commit, checkout, stash); their config, hooks and pointers stay read-only.
            False (the default) keeps each of those git dirs read-only as a whole.
        submodule_trees: The work trees of the project repository's submodules, as its index
            records them (see :func:`~nestor.tools.git.runner.submodule_trees`): their ``.git``
            files stay read-only and the folders cannot be renamed, so that a command cannot point
            the ``git status`` that recurses into them at a config of its own.
        own_dirs: Directories of nestor's own a ``read-only`` command may write besides its private
            temp dir (a shadow repository's git dir, for nestor's own git); none for an agent's shell.

    """

    mode: SandboxMode = "workspace-write"
    network: bool = True
    temp_dirs: tuple[Path, ...] | None = None
    kept_read_only: tuple[Path, ...] = ()
    writable_git: bool = False
    submodule_trees: tuple[Path, ...] = ()
    own_dirs: tuple[Path, ...] = ()

    @classmethod
    def read_only(cls, *, own_dirs: tuple[Path, ...] = ()) -> SandboxPolicy:
        """The policy of agents that cannot write files: read-only, no network.

        ``own_dirs`` are directories of nestor's own that stay writable (see :attr:`own_dirs`).
        """
        return cls(mode="read-only", network=False, own_dirs=own_dirs)

    @property
    def enabled(self) -> bool:
        """Whether commands run in a sandbox at all."""
        return self.mode != "off"

    @property
    def allows_network(self) -> bool:
        """Whether network connections are allowed (never in ``read-only`` mode)."""
        return self.network and self.mode != "read-only"

    def writable_paths(self, project_root: Path, env: Mapping[str, str] = os.environ) -> tuple[Path, ...]:
        """The existing directories a command may write to (``workspace-write``), resolved.

        ``read-only`` mode has only :attr:`own_dirs`: its private temp dir is made by the backend.
        """
        if self.mode == "read-only":
            return _unique_existing(list(self.own_dirs))
        if self.mode != "workspace-write":
            return ()
        candidates = [project_root, *(self.temp_dirs if self.temp_dirs is not None else _temp_dirs(env))]
        return _unique_existing(candidates)

    def visible_paths(self, project_root: Path) -> tuple[Path, ...]:
        """What a ``read-only`` sandbox shows again over its fresh ``/tmp``: the project's repositories.

        A project below a repository's top level that lies in a temp dir would otherwise lose its
        ``.git``, and ``git log`` would fail there.
        """
        if self.mode != "read-only":
            return ()
        paths: list[Path] = []
        for repository in enclosing_repositories(project_root):
            paths += [repository.work_tree, repository.git_dir, repository.common_dir]
        return _unique_existing(paths)

    def protected_paths(self, project_root: Path) -> tuple[Path, ...]:
        """Paths inside the writable ones that stay read-only (``workspace-write``).

        Every ``.git`` from the project root upwards (valid or not yet: a command could fill one
        in), and the git dirs of the repositories they make (the one a ``.git`` file names, their
        common dirs) are read-only as a whole, so nothing git reads can be changed or created while
        a command runs. With ``writable_git`` only what :data:`GIT_CONFIG_FILES` names in each is
        (a repository without ``hooks`` gets an empty one, as ``git init`` makes, to protect).
        A ``.git`` file stays read-only itself.
        """
        if self.mode != "workspace-write":
            return ()
        candidates = list(self.kept_read_only)
        repositories = enclosing_repositories(project_root)
        git_dirs = [entry for entry in git_entries(project_root) if entry.is_dir()]
        for repository in repositories:
            git_dirs += [repository.git_dir, repository.common_dir]
        for entry in git_entries(project_root):
            if not entry.is_dir():
                candidates.append(entry)  # a .git file: it says where the repository is
        candidates += [tree / GIT_DIR_NAME for tree in self.submodule_trees]
        for git_dir in dict.fromkeys(path.resolve() for path in git_dirs):
            if not self.writable_git:
                candidates.append(git_dir)
                continue
            if git_dir.is_relative_to(project_root.resolve()):
                (git_dir / "hooks").mkdir(exist_ok=True)
            for each in (git_dir, *submodule_git_dirs(git_dir)):
                candidates += [each / name for name in GIT_CONFIG_FILES]
        return _unique_existing(candidates)

    def pinned_paths(self, project_root: Path) -> tuple[Path, ...]:
        """Writable git dirs bound onto themselves, so a command can neither rename nor replace them.

        ``mv .git .git-old; mkdir .git`` would otherwise leave a repository whose hooks and config
        the command wrote, for the user's next ``git`` to run. (A read-only git dir is a mount
        point already, which cannot be renamed either.)
        """
        if self.mode != "workspace-write":
            return ()
        pinned = list(self.submodule_trees)  # its .git file is a mount point: the folder must stay
        if self.writable_git:
            pinned += [entry for entry in git_entries(project_root) if entry.is_dir()]
        return _unique_existing(pinned)

    def planted_paths(self, project_root: Path) -> tuple[Path, ...]:
        """Files that point git at another repository's config, absent now: none may be left behind.

        Where a git dir is writable (``writable_git``, or under Landlock, which cannot keep a path
        beneath a writable one read-only), a command could create a ``commondir`` naming a config
        in a temp dir; those it created are removed after it.
        """
        if self.mode != "workspace-write":
            return ()
        git_dirs = [entry for entry in git_entries(project_root) if entry.is_dir()]
        git_dirs += [repository.git_dir for repository in enclosing_repositories(project_root)]
        planted: list[Path] = []
        for git_dir in dict.fromkeys(path.resolve() for path in git_dirs):
            for name in PLANTED_GIT_FILES:
                path = git_dir / name
                if not os.path.lexists(path) and path not in planted:
                    planted.append(path)
        # A submodule not checked out has no .git: one a command made would be recursed into.
        planted += [
            tree / GIT_DIR_NAME for tree in self.submodule_trees if not os.path.lexists(tree / GIT_DIR_NAME)
        ]
        return tuple(planted)

    def refusal_note(self, output: str = "") -> str:
        """The line added to a failed command's output, so the model knows the sandbox may be why.

        When the output names a ``.git`` path and the git dirs are read-only, the line says so,
        and what the user can do.
        """
        if self.mode == "read-only":
            return "(sandbox: this agent is read-only: writes outside $TMPDIR and network access are blocked)"
        network = "" if self.allows_network else "; network access is blocked"
        git = ""
        if not self.writable_git and _NAMES_GIT_DIR.search(output):
            git = (
                "; the repository's .git is read-only to commands (git add, commit, checkout, stash): "
                "the user can run them, or allow them with [sandbox] writable_git = true"
            )
        return f"(sandbox: writes outside the project and the temp dirs are blocked{network}{git})"


def _temp_dirs(env: Mapping[str, str]) -> list[Path]:
    dirs = [Path("/tmp")]
    if tmpdir := env.get("TMPDIR", "").strip():
        dirs.append(Path(tmpdir))
    dirs.append(Path(tempfile.gettempdir()))
    return dirs


def enclosing_repositories(project_root: Path) -> list[Repository]:
    """Every repository holding ``project_root``: its own, then each one further up."""
    found: list[Repository] = []
    start = project_root
    while (repository := find_repository(start)) is not None and repository not in found:
        found.append(repository)
        if repository.work_tree.parent == repository.work_tree:
            break
        start = repository.work_tree.parent
    return found


def _unique_existing(paths: list[Path]) -> tuple[Path, ...]:
    found: list[Path] = []
    for path in paths:
        resolved = path.resolve()
        if resolved.exists() and resolved not in found:
            found.append(resolved)
    return tuple(found)
