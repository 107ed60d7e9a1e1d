"""A task's workspace: a fresh copy of its repository, with the task's setup applied and committed.

The commit is the baseline the checks compare against (``unchanged``, ``changed``), so a harness
that commits on its own (aider does) is judged on what it changed all the same.
"""

from __future__ import annotations

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
    git(workspace, "commit", "-q", "-m", "baseline")
    return workspace


def baseline_commit(workspace: Path) -> str:
    """The workspace's root commit: its state before the harness ran."""
    return git(workspace, "rev-list", "--max-parents=0", "HEAD").split()[0]


def git(workspace: Path, *args: str) -> str:
    """Run git in ``workspace`` and return its output; raises on failure."""
    done = subprocess.run(
        [*_GIT, *args], cwd=workspace, capture_output=True, text=True, check=True, stdin=subprocess.DEVNULL
    )
    return done.stdout
