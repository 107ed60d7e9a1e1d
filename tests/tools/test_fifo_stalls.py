"""A program nestor runs for itself, stuck opening a FIFO a repository planted, is stopped at once."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from nestor.tools.fifo_stalls import FifoStallError, watch
from nestor.tools.git.runner import run_git, run_git_async
from tests.hostile_repos import committed_repo, git


async def test_a_program_waiting_to_open_a_fifo_is_stopped(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    process = await asyncio.create_subprocess_exec("cat", str(tmp_path / "pipe"), start_new_session=True)

    started = time.monotonic()
    with pytest.raises(FifoStallError):
        await watch(process, group=True)

    assert await process.wait() != 0 and time.monotonic() - started < 5


async def test_a_program_that_ends_is_left_alone(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec("sleep", "0.5")

    await watch(process, group=False)

    assert process.returncode == 0


@pytest.mark.parametrize(
    "planted", [".git/index", ".gitignore", "sub/.gitignore", ".git/objects/info/alternates"]
)
async def test_nestors_git_is_not_held_by_a_fifo_in_the_repository(tmp_path: Path, planted: str) -> None:
    # The third red team: each of these cost 30 s (git's time limit) at start-up and at every `ls`.
    repo = committed_repo(tmp_path / "repo")
    (repo / "sub").mkdir()
    (repo / "sub" / "b.txt").write_text("b\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "sub")
    (repo / planted).unlink(missing_ok=True)
    os.mkfifo(repo / planted)

    started = time.monotonic()
    run_git(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    await run_git_async(repo, "status", "--short")

    assert time.monotonic() - started < 8
