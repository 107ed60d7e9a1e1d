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


def capital_filter(tmp: Path, marker: Path) -> Path:
    """A filter and a diff driver named with capitals: a key's subsection keeps its case."""
    repo = committed_repo(tmp / "repo")
    (repo / ".gitattributes").write_text("* filter=Evil diff=Evil\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "capitals")
    git(repo, "config", "filter.Evil.clean", command(marker, "capital-clean"))
    git(repo, "config", "diff.Evil.textconv", command(marker, "capital-textconv"))
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


def embed(repo: Path, path: str, marker: Path, name: str | None) -> Path:
    """A repository committed at ``repo/path`` (its ``.git`` a folder there, the old layout), recorded in
    ``repo``'s index as a submodule (a gitlink), whose config sets a clean filter and a textconv
    recording ``name`` (none when None)."""
    inner = committed_repo(repo / path)
    if name is not None:
        git(inner, "config", "filter.evil.clean", command(marker, f"{name}-clean"))
        git(inner, "config", "diff.evil.textconv", command(marker, f"{name}-textconv"))
    commit = git(inner, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{commit},{path}")
    git(repo, "commit", "-qm", f"add {path}")
    touch_content(inner)
    return inner


def embedded_submodule(tmp: Path, marker: Path) -> Path:
    """A submodule whose git dir is the ``.git`` folder in its own folder, not ``.git/modules``."""
    repo = committed_repo(tmp / "repo")
    embed(repo, "sub", marker, "embedded")
    return repo


def nested_submodules(tmp: Path, marker: Path) -> Path:
    """A submodule of a submodule, both embedded: only the innermost one's config names commands."""
    repo = committed_repo(tmp / "repo")
    sub = embed(repo, "sub", marker, None)
    embed(sub, "deep/inner", marker, "nested")
    return repo


def moved_submodule(tmp: Path, marker: Path) -> Path:
    """A submodule whose ``.git`` file names a git dir elsewhere in the project, with a worktree config."""
    repo = committed_repo(tmp / "repo")
    sub = embed(repo, "sub", marker, "moved")
    git(sub, "config", "--unset", "filter.evil.clean")
    git(sub, "config", "extensions.worktreeConfig", "true")
    git(sub, "config", "--worktree", "filter.evil.clean", command(marker, "moved-worktree-clean"))
    (sub / ".git").rename(repo / "vendor.git")
    (sub / ".git").write_text("gitdir: ../vendor.git\n")
    return repo


def submodule_worktree_elsewhere(tmp: Path, marker: Path) -> Path:
    """A submodule whose ``core.worktree`` names another folder, where a submodule of its own lives."""
    repo = committed_repo(tmp / "repo")
    sub = embed(repo, "sub", marker, None)
    elsewhere = repo / "elsewhere"
    (sub / ".git").rename(tmp / "moving")
    (sub / "a.txt").rename(tmp / "a.txt")
    elsewhere.mkdir()
    (tmp / "a.txt").rename(elsewhere / "a.txt")
    (sub / ".gitattributes").rename(elsewhere / ".gitattributes")
    (tmp / "moving").rename(sub / ".git")
    git(sub, "config", "core.worktree", "../../elsewhere")
    inner = committed_repo(elsewhere / "inner")
    git(inner, "config", "filter.evil.clean", command(marker, "elsewhere-clean"))
    commit = git(inner, "rev-parse", "HEAD").strip()
    outer = ("--git-dir", str(sub / ".git"))
    git(elsewhere, *outer, "update-index", "--add", "--cacheinfo", f"160000,{commit},inner")
    git(elsewhere, *outer, "commit", "-qm", "add inner")
    touch_content(inner)
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
    "filter named in capitals": capital_filter,
    "includes": included_config,
    "worktree config": worktree_config,
    "hooks": hooks,
    "commondir": commondir,
    ".git file": git_file,
    "linked worktree": linked_worktree,
    "submodule": submodule,
    "below the top level": below_top_level,
    "embedded submodule": embedded_submodule,
    "nested submodules": nested_submodules,
    "moved submodule": moved_submodule,
    "submodule worktree elsewhere": submodule_worktree_elsewhere,
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
