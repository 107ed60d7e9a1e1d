"""The shell sandbox end to end: ``nestor run`` in a subprocess, agents' real ``bash`` calls.

The main agent (it has ``write`` and ``edit``) gets the configured ``workspace-write`` sandbox; a
project agent file with ``tools: Read, Grep, Bash`` gets a read-only one.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall, first_user_text
from nestor.tools.sandbox.detect import detect
from tests.cli.support import git_repo, nestor, openai_env
from tests.server_routes import Route, router

READER = """---
name: reader
description: Reads files and runs read-only commands.
tools: Read, Grep, Bash
---
Read what you are asked to read.
"""


def bash(command: str) -> ServerToolCall:
    return ServerToolCall("bash", {"command": command})


def tool_results(requests: list[dict[str, Any]], first_user: str) -> str:
    last = [request for request in requests if first_user_text(request).startswith(first_user)][-1]
    return "\n".join(str(message["content"]) for message in last["messages"] if message["role"] == "tool")


def test_an_agent_without_write_tools_gets_a_read_only_shell(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "hello\n", ".claude/agents/reader.md": READER})
    outside = tmp_path / "outside"
    outside.mkdir()
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(tool_calls=(bash("echo main > by-main.txt && echo x > .git/hooks/pre-commit"),)),
            ServerReply(
                tool_calls=(
                    ServerToolCall(
                        "task", {"description": "try", "prompt": "try writing", "subagent_type": "reader"}
                    ),
                )
            ),
            ServerReply(text="done"),
        ],
        "try writing": [
            ServerReply(tool_calls=(bash(f"cat README.md; touch by-reader.txt; touch {outside}/x"),)),
            ServerReply(text="could not write"),
        ],
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        done = nestor(
            ["run", "--yolo", "--model", "openai-chat:gpt-4o", "USER: write, then delegate"],
            cwd=repo,
            env=openai_env(tmp_path, server),
        )
        requests = list(server.requests)

    assert done.returncode == 0, done.stderr
    assert (repo / "by-main.txt").read_text() == "main\n"
    assert not (repo / "by-reader.txt").exists()
    assert not (outside / "x").exists()
    reader_saw = tool_results(requests, "try writing")
    assert "hello" in reader_saw
    assert (
        "(sandbox: this agent is read-only: writes outside $TMPDIR and network access are blocked)"
        in reader_saw
    )
    if asyncio.run(detect()).backend == "bwrap":
        assert not (repo / ".git" / "hooks" / "pre-commit").exists()
        assert (
            "(sandbox: writes outside the project and the temp dirs are blocked; the repository's .git is"
            in (tool_results(requests, "USER"))
        )
