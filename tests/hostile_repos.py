"""Repositories whose own git config names commands, for the tests of everything nestor runs git for.

Each attack leaves a marker file when any of its commands runs. A repository delivered with its
``.git`` (an archive, a copied folder) can carry any of them; nestor's own git must run none.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

CLEAN_GIT_ENV = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd: Path, *args: str) -> str:
    """Run the test's own git (no user or system config) and return its output."""
    done = subprocess.run(
        [
            "git",
            "-c",
            "user.email=t@example.com",
            "-c",
            "user.name=t",
            "-c",
            "protocol.file.allow=always",
            *args,
        ],
        cwd=cwd,
        env=os.environ | CLEAN_GIT_ENV,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def committed_repo(root: Path) -> Path:
    """A repository with one committed file, ``a.txt``, whose attributes select a filter and a diff."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a\n")
    (root / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "init")
    return root


def touch_content(root: Path) -> None:
    """Change ``a.txt`` so that git must read (and filter) its content to know its status."""
    (root / "a.txt").write_text("b\n")
    os.utime(root / "a.txt", (1, 1))


def command(marker: Path, name: str) -> str:
    """A shell command that records that ``name`` ran (and still passes content through)."""
    return f"echo {name} >> {marker}; cat"


Attack = Callable[[Path, Path], Path]
"""Makes a hostile repository under a directory; returns the directory to run nestor's git in."""


def fsmonitor(tmp: Path, marker: Path) -> Path:
    repo = committed_repo(tmp / "repo")
    git(repo, "config", "core.fsmonitor", f"echo fsmonitor >> {marker}; false")
    return repo


def clean_filter(tmp: Path, marker: Path) -> Path:
    repo = committed_repo(tmp / "repo")
    git(repo, "config", "filter.evil.clean", command(marker, "clean"))
    git(repo, "config", "filter.evil.process", command(marker, "process"))
    git(repo, "config", "diff.evil.textconv", command(marker, "textconv"))
    git(repo, "config", "diff.external", command(marker, "external"))
    return repo


def included_config(tmp: Path, marker: Path) -> Path:
    repo = committed_repo(tmp / "repo")
    (repo / ".git" / "more.cfg").write_text(f'[core]\n\tfsmonitor = "echo included >> {marker}; false"\n')
    (tmp / "cond.cfg").write_text(f'[filter "evil"]\n\tclean = "{command(marker, "includeIf")}"\n')
    git(repo, "config", "include.path", "more.cfg")
    git(repo, "config", f"includeIf.gitdir:{repo}/.git.path", str(tmp / "cond.cfg"))
    return repo


def worktree_config(tmp: Path, marker: Path) -> Path:
    """Case 2: a clean filter in ``.git/config.worktree``, which ``git config --local`` does not show."""
    repo = committed_repo(tmp / "repo")
    git(repo, "config", "extensions.worktreeConfig", "true")
    git(repo, "config", "--worktree", "filter.evil.clean", command(marker, "worktree-clean"))
    git(repo, "config", "--worktree", "core.fsmonitor", f"echo worktree-fsmonitor >> {marker}; false")
    return repo


def hooks(tmp: Path, marker: Path) -> Path:
    repo = committed_repo(tmp / "repo")
    hooks_dir = tmp / "hooks"
    hooks_dir.mkdir()
    for name in ("post-index-change", "post-checkout", "pre-commit", "reference-transaction"):
        hook = hooks_dir / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        hook.chmod(0o755)
    git(repo, "config", "core.hooksPath", str(hooks_dir))
    return repo


def commondir(tmp: Path, marker: Path) -> Path:
    """Case 6: a ``commondir`` naming another repository whose config sets an fsmonitor."""
    repo = committed_repo(tmp / "repo")
    evil = tmp / "evil"
    git(tmp, "init", "-q", "--bare", str(evil))
    git(evil, "config", "core.fsmonitor", f"echo commondir >> {marker}; false")
    git(evil, "config", "filter.evil.clean", command(marker, "commondir-clean"))
    for name in ("objects", "refs"):
        subprocess.run(["cp", "-r", str(repo / ".git" / name), str(evil)], check=True)
    (repo / ".git" / "commondir").write_text(f"{evil}\n")
    return repo


def git_file(tmp: Path, marker: Path) -> Path:
    """A ``.git`` file naming a git dir elsewhere, whose config sets an fsmonitor."""
    repo = committed_repo(tmp / "repo")
    moved = tmp / "elsewhere.git"
    (repo / ".git").rename(moved)
    (repo / ".git").write_text(f"gitdir: {moved}\n")
    git(repo, "config", "core.fsmonitor", f"echo git-file >> {marker}; false")
    return repo


def linked_worktree(tmp: Path, marker: Path) -> Path:
    """A linked worktree: its config is its main repository's."""
    main = committed_repo(tmp / "main")
    git(main, "worktree", "add", "-q", str(tmp / "wt"))
    git(main, "config", "core.fsmonitor", f"echo linked >> {marker}; false")
    git(main, "config", "filter.evil.clean", command(marker, "linked-clean"))
    return tmp / "wt"


def submodule(tmp: Path, marker: Path) -> Path:
    """Case 3: a submodule's own ``filter.*.clean``, reached when ``git status`` recurses into it."""
    inner = committed_repo(tmp / "inner")
    repo = committed_repo(tmp / "repo")
    git(repo, "submodule", "add", "-q", str(inner), "sub")
    git(repo, "commit", "-qm", "sub")
    git(repo / "sub", "config", "filter.evil.clean", command(marker, "submodule-clean"))
    git(repo / "sub", "config", "core.fsmonitor", f"echo submodule-fsmonitor >> {marker}; false")
    touch_content(repo / "sub")
    return repo


def below_top_level(tmp: Path, marker: Path) -> Path:
    """A project that is a folder of the repository, not its top level."""
    repo = fsmonitor(tmp, marker)
    git(repo, "config", "filter.evil.clean", command(marker, "below-clean"))
    (repo / "pkg").mkdir()
    (repo / "pkg" / "b.txt").write_text("b\n")
    return repo / "pkg"


ATTACKS: dict[str, Attack] = {
    "fsmonitor": fsmonitor,
    "clean filter": clean_filter,
    "includes": included_config,
    "worktree config": worktree_config,
    "hooks": hooks,
    "commondir": commondir,
    ".git file": git_file,
    "linked worktree": linked_worktree,
    "submodule": submodule,
    "below the top level": below_top_level,
}
"""Every hostile repository, by name (the parametrize ids)."""


def build(attack: Attack, tmp: Path) -> tuple[Path, Path]:
    """Build ``attack`` under ``tmp``; returns the directory to run in and the marker to check."""
    marker = tmp / "pwned"
    directory = attack(tmp, marker)
    repo_root = Path(git(directory, "rev-parse", "--show-toplevel").strip())
    touch_content(repo_root)
    marker.unlink(missing_ok=True)  # the test's own git may have run the attack while building it
    return directory, marker
