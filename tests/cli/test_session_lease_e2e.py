"""One session, one nestor at a time: a second ``--resume`` is refused, a killed run's lease is stale."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.support import git_repo, nestor, nestor_json, openai_env
from tests.processes import find_command

MODEL = ["--model", "openai-chat:gpt-4o"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo", {"README.md": "# demo\n"})


def test_a_second_resume_of_a_running_session_is_refused_and_a_killed_run_frees_it(
    repo: Path, tmp_path: Path, cleanup_pids: list[int]
) -> None:
    # The sleep is found on the host by its command line: inside the sandbox the shell's $$ is a
    # pid of its own namespace, and killing that number's group on the host would miss it.
    started, token = tmp_path / "started", f"120.{os.getpid()}5"
    command = f"echo started > {started}; sleep {token}"
    script = [
        ServerReply(text="first"),
        ServerReply(text="A title"),
        ServerReply(tool_calls=(ServerToolCall("bash", {"command": command}),)),
        ServerReply(text="resumed after the kill"),
    ]
    with ScriptedOpenAIServer(script) as server:
        env = openai_env(tmp_path, server)
        first = nestor_json(["run", "-o", "json", *MODEL, "one"], cwd=repo, env=env)
        session_id = first["session_id"]
        holder = subprocess.Popen(
            [sys.executable, "-m", "nestor", "run", "--yolo", *MODEL, "--resume", session_id, "wait"],
            cwd=repo,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        sleep = find_command(["sleep", token], started, lambda: holder.poll() is None)
        cleanup_pids.append(os.getpgid(sleep))
        requests_before = len(server.requests)

        second = nestor(["run", *MODEL, "--resume", session_id, "interleave"], cwd=repo, env=env)
        assert second.returncode == 1
        assert len(server.requests) == requests_before  # refused before any model request
        lines = second.stderr.strip().splitlines()
        assert lines[0] == f"error: session {session_id} is in use by another nestor (pid {holder.pid})"
        assert lines[1].startswith("hint: ") and "Traceback" not in second.stderr
        listed = nestor_json(["sessions", "list", "--json"], cwd=repo, env=env)
        assert listed[0]["status"] == "running"

        holder.kill()
        holder.wait(timeout=10)
        listed = nestor_json(["sessions", "list", "--json"], cwd=repo, env=env)
        assert listed[0]["status"] == "interrupted"
        shown = nestor(["sessions", "list"], cwd=repo, env=env)
        assert "interrupted" in shown.stdout

        resumed = nestor_json(
            ["run", "-o", "json", *MODEL, "--resume", session_id, "go on"], cwd=repo, env=env
        )
    assert resumed["result"] == "resumed after the kill"
    after = nestor_json(["sessions", "list", "--json"], cwd=repo, env=env)
    assert after[0]["status"] == "idle"
