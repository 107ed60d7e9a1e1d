"""``nestor run`` on a project holding a FIFO: the model's view of it is refused and the run ends.

Before, the view tool's thread blocked opening the FIFO: the run never finished, and after Ctrl-C
the process never exited either (it waited for that thread).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.support import git_repo, nestor, openai_env


def test_a_run_that_views_and_writes_a_fifo_is_told_why_and_finishes(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# fifo\n"})
    os.mkfifo(repo / "events.log")
    script = [
        ServerReply(
            tool_calls=(
                ServerToolCall("view", {"path": "events.log"}),
                ServerToolCall("write", {"path": "events.log", "content": "x"}),
            )
        ),
        ServerReply(text="events.log is a pipe; nothing to read."),
    ]
    with ScriptedOpenAIServer(script) as server:
        env = openai_env(tmp_path, server)
        try:
            done = nestor(
                ["run", "--yolo", "-o", "json", "--model", "openai-chat:gpt-4o", "read events.log"],
                cwd=repo,
                env=env,
                timeout=90,
            )
        except subprocess.TimeoutExpired as expired:
            raise AssertionError("nestor run hung on the FIFO") from expired
        requests = server.requests

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"] == "events.log is a pipe; nothing to read."
    tool_results = [json.loads(m["content"])["error"] for m in requests[1]["messages"] if m["role"] == "tool"]
    assert tool_results == [
        "events.log is a FIFO (named pipe), not a regular file; only regular files can be read.",
        "Cannot write events.log: it is a FIFO (named pipe), not a regular file; "
        "write to a regular file instead.",
    ]
