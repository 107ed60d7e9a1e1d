"""The file tools run in nestor's own, unsandboxed process: a name a sandboxed command controls
must not send their writes elsewhere between the permission and the write.

SECURITY.md, "Permission rules": file tools match the real path, and a bare write or
``edit(src/**)`` covers the project only; "OS sandbox": commands write only to the project.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.support import git_repo, nestor, openai_env
from tests.redteam.support import MODEL, tool_answers, user_config
from tests.server_routes import Route, router, task_call

pytestmark = pytest.mark.timeout(240)


def bash(command: str) -> ServerToolCall:
    return ServerToolCall("bash", {"command": command})


def test_the_write_tool_never_follows_a_link_swapped_in_after_its_permission(tmp_path: Path) -> None:
    # allow bash (it is sandboxed) and edit(src/**): writing outside the project must still ask
    # (headless: be refused). A background sub-agent's command swaps src/x between a file and a
    # link to a folder outside while the main agent writes src/x many times.
    repo = git_repo(tmp_path / "repo", {"src/a.py": "x = 1\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    user_config(tmp_path, '[permissions]\nallow = ["bash", "edit(src/**)"]\n')
    swap = (
        "cd src; end=$((SECONDS+40)); while [ $SECONDS -lt $end ]; do "
        f"ln -sfn {outside}/x x.l; mv -T x.l x; : > x.f; mv -T x.f x; done"
    )
    writes = tuple(ServerToolCall("write", {"path": "src/x", "content": f"written {n}\n"}) for n in range(40))

    def main_agent(body: dict[str, Any]) -> ServerReply:
        # Turn by turn, counted by the tool results so far (a background notice adds a request).
        turn = sum(1 for message in body["messages"] if message["role"] == "tool")
        if turn == 0:
            return ServerReply(tool_calls=(task_call("swap", "swap links", run_in_background=True),))
        if turn == 1:
            return ServerReply(tool_calls=(bash("sleep 3"),))
        if turn < 2 + 3 * len(writes):
            return ServerReply(tool_calls=writes)
        return ServerReply(text="done")

    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [main_agent] * 20,
        "swap links": [
            ServerReply(tool_calls=(ServerToolCall("bash", {"command": swap, "timeout": 90}),)),
            ServerReply(text="ok"),
        ],
    }
    with ScriptedOpenAIServer(router(routes, requests=60)) as server:
        done = nestor(["run", *MODEL, "USER: write"], cwd=repo, env=openai_env(tmp_path, server), timeout=200)
        answers = tool_answers(server.requests)
    assert done.returncode == 0, done.stderr
    assert not (outside / "x").exists(), (
        "the write tool wrote outside the project: " + (outside / "x").read_text() + str(answers[-3:])
    )
