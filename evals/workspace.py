"""A task's workspace: a fresh copy of its repository, with the task's setup applied and committed.

The setup is the root commit; the task's ``history`` follows as commits of their own (with fixed
dates, so a question about the log has one answer), and its ``uncommitted`` edits are left in the
work tree. What the harness is given, uncommitted edits included, is kept as the commit
``refs/eval/baseline`` (HEAD does not move to it): the checks compare against it (``unchanged``,
``changed``, ``allowed``), so a harness that commits on its own (aider does) is judged on what it
changed all the same.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from evals.tasks import REPOS_DIR, Task, apply_edits

_GIT = [
    "git",
    "-c",
    "user.email=eval@nestor.invalid",
    "-c",
    "user.name=nestor eval",
    "-c",
    "commit.gpgsign=false",
]


def prepare_workspace(task: Task, parent: Path, repos_dir: Path = REPOS_DIR) -> Path:
    """Copy the task's repository into ``parent/<repo>``, apply its setup, and commit it all.

    Returns:
        The workspace directory, a git repository whose root commit is the baseline.

    """
    workspace = parent / task.repo
    shutil.copytree(
        repos_dir / task.repo,
        workspace,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".git"),
    )
    apply_edits(workspace, task.setup)
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "add", "-A")
    _commit(workspace, "baseline", 0)
    for number, commit in enumerate(task.history, 1):
        apply_edits(workspace, commit.edits)
        git(workspace, "add", "-A")
        _commit(workspace, commit.message, number)
    apply_edits(workspace, task.uncommitted)
    git(workspace, "add", "-A")
    tree = git(workspace, "write-tree").strip()
    snapshot = git(workspace, "commit-tree", tree, "-p", "HEAD", "-m", "what the harness was given").strip()
    git(workspace, "update-ref", BASELINE_REF, snapshot)
    git(workspace, "reset", "-q")  # the uncommitted edits stay in the work tree, unstaged
    return workspace


BASELINE_REF = "refs/eval/baseline"


def baseline_commit(workspace: Path) -> str:
    """The commit of the workspace as the harness was given it (see the module docstring)."""
    return git(workspace, "rev-parse", BASELINE_REF).strip()


def _commit(workspace: Path, message: str, number: int) -> None:
    """Commit the index with ``message``, dated ``number`` days after a fixed day."""
    date = f"2026-01-{number + 1:02d}T12:00:00+00:00"
    git(
        workspace,
        "-c",
        f"user.name={_AUTHORS[number % len(_AUTHORS)]}",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        message,
        "--date",
        date,
        env={"GIT_COMMITTER_DATE": date},
    )


_AUTHORS = ("nestor eval", "Ada Lovelace", "Grace Hopper")


def git(workspace: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in ``workspace`` and return its output; raises on failure."""
    done = subprocess.run(
        [*_GIT, *args],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **env} if env else None,
    )
    return done.stdout
