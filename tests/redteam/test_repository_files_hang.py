"""A repository delivered with a FIFO where nestor's own readers expect a file hangs nestor.

SECURITY.md, "Files a repository provides" and "nestor's own commands": a repository's ``.git``
that arrives other than by ``git clone`` is a stranger's input, and nothing it holds may stall a
start ("so it cannot hang a start"); HELPERS: bad input is never a hang.
"""

from __future__ import annotations

import os
from pathlib import Path

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.support import git_repo, openai_env
from tests.hostile_repos import git
from tests.redteam.support import MODEL, run_bounded


def test_a_packed_refs_fifo_does_not_hang_the_start(tmp_path: Path) -> None:
    # HEAD names refs/heads/main, whose only record was packed; packed-refs is now a FIFO.
    repo = git_repo(tmp_path / "repo", {"README.md": "# r\n"})
    git(repo, "pack-refs", "--all")
    (repo / ".git" / "packed-refs").unlink()
    os.mkfifo(repo / ".git" / "packed-refs")
    with ScriptedOpenAIServer([ServerReply(text="hello")]) as server:
        run = run_bounded(["run", *MODEL, "hi"], cwd=repo, env=openai_env(tmp_path, server), within_s=45)
        asked = len(server.requests)
    # Today: location.py's _packed_ref opens the FIFO without O_NONBLOCK, in the event loop, and
    # nestor never sends its first request (SIGINT does not stop it either).
    assert run.ended, "nestor run hung on a FIFO .git/packed-refs"
    assert run.returncode == 0 and asked >= 1, run.stderr


def test_a_fifo_ignore_file_does_not_hang_grep_or_glob(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"a.txt": "needle\n"})
    os.mkfifo(repo / ".rgignore")  # ripgrep reads it; a FIFO blocks its open forever
    script = [
        ServerReply(tool_calls=(ServerToolCall("grep", {"pattern": "needle"}),)),
        ServerReply(tool_calls=(ServerToolCall("glob", {"pattern": "*.txt"}),)),
        ServerReply(text="done"),
    ]
    with ScriptedOpenAIServer(script) as server:
        run = run_bounded(["run", *MODEL, "go"], cwd=repo, env=openai_env(tmp_path, server), within_s=60)
    assert run.ended, "grep (ripgrep) hung on a FIFO .rgignore, and nestor run with it"
    assert run.returncode == 0, run.stderr
