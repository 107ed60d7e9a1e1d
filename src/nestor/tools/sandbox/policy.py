"""What a sandboxed shell may touch: the policy, and the paths it resolves to for one project."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

SandboxMode: TypeAlias = Literal["read-only", "workspace-write", "off"]

PROTECTED_GIT_PATHS = (".git/hooks", ".git/config")
"""Kept read-only inside a writable project: a hook, or a ``core.hooksPath``/``core.fsmonitor``
setting, would run a command the sandbox wrote outside the sandbox, at the user's next ``git``."""


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

    """

    mode: SandboxMode = "workspace-write"
    network: bool = True
    temp_dirs: tuple[Path, ...] | None = None
    kept_read_only: tuple[Path, ...] = ()

    @classmethod
    def read_only(cls) -> SandboxPolicy:
        """The policy of agents that cannot write files: read-only, no network."""
        return cls(mode="read-only", network=False)

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

        ``read-only`` mode has none: its private temp dir is made by the backend.
        """
        if self.mode != "workspace-write":
            return ()
        candidates = [project_root, *(self.temp_dirs if self.temp_dirs is not None else _temp_dirs(env))]
        return _unique_existing(candidates)

    def protected_paths(self, project_root: Path) -> tuple[Path, ...]:
        """Paths inside the writable project that stay read-only (see :data:`PROTECTED_GIT_PATHS`).

        A repository without ``.git/hooks`` gets an empty one (as ``git init`` makes), so that the
        sandbox has a directory to protect instead of leaving it free to be created. A ``.git``
        file (a worktree, a submodule) stays read-only itself, and so do the hooks and config of
        the repository it names (which may lie in a writable temp dir).
        """
        if self.mode != "workspace-write":
            return ()
        git_dir = project_root / ".git"
        if git_dir.is_dir() and not git_dir.is_symlink():
            (git_dir / "hooks").mkdir(exist_ok=True)
        candidates = [project_root / relative for relative in PROTECTED_GIT_PATHS]
        candidates += self.kept_read_only
        if git_dir.is_file():
            candidates.append(git_dir)
            if (linked := _linked_git_dir(git_dir)) is not None:
                common = _common_dir(linked)
                candidates += [linked / "commondir", linked / "config.worktree"]
                candidates += [common / "hooks", common / "config"]
        return _unique_existing(candidates)

    def pinned_paths(self, project_root: Path) -> tuple[Path, ...]:
        """Writable paths bound onto themselves, so a command can neither rename nor replace them.

        ``mv .git .git-old; mkdir .git`` would otherwise leave a repository whose hooks and config
        the command wrote, for the user's next ``git`` to run.
        """
        if self.mode != "workspace-write":
            return ()
        git_dir = project_root / ".git"
        return _unique_existing([git_dir]) if git_dir.is_dir() and not git_dir.is_symlink() else ()

    def planted_paths(self, project_root: Path) -> tuple[Path, ...]:
        """Files that point git at another repository's config, absent now: none may be left behind.

        ``.git/commondir`` makes git read the config (and hooks) of the directory it names, which a
        command could write in a temp dir; the sandbox cannot keep a file from being created, so
        one a command created is removed after it.
        """
        if self.mode != "workspace-write":
            return ()
        git_dir = project_root / ".git"
        if not git_dir.is_dir() or git_dir.is_symlink():
            return ()
        planted = git_dir / "commondir"
        return () if os.path.lexists(planted) else (planted,)

    def refusal_note(self) -> str:
        """The line added to a failed command's output, so the model knows the sandbox may be why."""
        if self.mode == "read-only":
            return "(sandbox: this agent is read-only: writes outside $TMPDIR and network access are blocked)"
        network = "" if self.allows_network else "; network access is blocked"
        return f"(sandbox: writes outside the project and the temp dirs are blocked{network})"


def _temp_dirs(env: Mapping[str, str]) -> list[Path]:
    dirs = [Path("/tmp")]
    if tmpdir := env.get("TMPDIR", "").strip():
        dirs.append(Path(tmpdir))
    dirs.append(Path(tempfile.gettempdir()))
    return dirs


def _linked_git_dir(git_file: Path) -> Path | None:
    """The directory a ``.git`` file names (``gitdir: PATH``), or None when it names none."""
    try:
        first = git_file.read_text(encoding="utf-8", errors="replace")[:4096].splitlines()[:1]
    except OSError:
        return None
    if not first or not first[0].startswith("gitdir:"):
        return None
    linked = git_file.parent / first[0].removeprefix("gitdir:").strip()
    return linked if linked.is_dir() else None


def _common_dir(git_dir: Path) -> Path:
    """The repository a worktree's git dir belongs to (its ``commondir`` file), else itself."""
    try:
        named = (git_dir / "commondir").read_text(encoding="utf-8", errors="replace")[:4096].strip()
    except OSError:
        return git_dir
    return git_dir / named if named else git_dir


def _unique_existing(paths: list[Path]) -> tuple[Path, ...]:
    found: list[Path] = []
    for path in paths:
        resolved = path.resolve()
        if resolved.exists() and resolved not in found:
            found.append(resolved)
    return tuple(found)
