"""An agent file's own MCP servers: started for the sub-agent, stopped when it ends, its parent's never."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from nestor.core.events import ToolFinished
from nestor.permissions import PermissionPolicy
from nestor.testing import ScriptedModel, call, last_tool_results, reply
from tests.runtime.tree_support import RoutedScript, TreeHarness
from tests.tools.mcp.support import DEMO_SERVER

pytestmark = pytest.mark.timeout(60)


def agent_file(pid_file: Path, *, persist: bool = False) -> str:
    return (
        "---\ndescription: Asks its server.\n"
        f"persist: {'true' if persist else 'false'}\n"
        "mcp_servers:\n  mine:\n"
        f"    command: {sys.executable}\n    args: ['{DEMO_SERVER}']\n"
        f"    env: {{DEMO_PID_FILE: '{pid_file}'}}\n"
        "---\nAsk.\n"
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def wait_until_dead(pid: int) -> bool:
    for _ in range(200):
        if not alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


def scripted() -> ScriptedModel:
    return ScriptedModel(
        RoutedScript(
            {
                "USER": [
                    call("task", {"description": "ask", "prompt": "CHILD: ask", "subagent_type": "asker"}),
                    reply("main done"),
                ],
                "CHILD": [
                    call("mcp__mine__echo", {"text": "own"}),
                    lambda messages, info: reply(f"child saw: {last_tool_results(messages)[0]}"),
                ],
            }
        )
    )


@pytest.mark.parametrize("persist", [False, True])
async def test_an_own_server_serves_the_sub_agent_and_stops_when_it_ends(
    tmp_path: Path, persist: bool
) -> None:
    pid_file = tmp_path / "server.pid"
    harness = TreeHarness(tmp_path, models={})
    harness.write_agent("asker", agent_file(pid_file, persist=persist))
    model = scripted()
    policy = PermissionPolicy.from_config(["mcp__mine__echo"], [], [], project_root=str(tmp_path))
    main = harness.main(model, policy=policy)

    try:
        await main.run("USER: go")

        [child] = harness.sessions.children(main.session_id)
        finished = [e for e in harness.events if isinstance(e, ToolFinished) and e.agent_id == child.id]
        assert [(e.tool_name, e.outcome) for e in finished] == [("mcp__mine__echo", "success")]
        assert "child saw: echo: own" in str(model.requests[-1].messages[-1])
        assert "mcp__mine__echo" not in {tool.name for tool in main.setup.tools}
        pid = int(pid_file.read_text())
        if persist:  # kept idle in the pool, with its server, for the next task
            assert alive(pid)
        else:
            assert await wait_until_dead(pid)
    finally:
        await harness.factory.close()
    assert await wait_until_dead(int(pid_file.read_text()))
