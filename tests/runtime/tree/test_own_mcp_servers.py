"""An agent file's own MCP servers: started for the sub-agent once approved, stopped when it ends."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from nestor.config.settings import ProjectServer
from nestor.core.events import ToolFinished
from nestor.permissions import PermissionPolicy
from nestor.store.approvals import Approvals
from nestor.testing import ScriptedModel, call, last_tool_results, reply
from nestor.tools.mcp.approval import ApprovalState, ServerApprovals
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


class Approver:
    """The user at the question: answers ``yes`` (or not) and remembers what was asked."""

    def __init__(self, harness: TreeHarness, *, yes: bool = True) -> None:
        self.yes = yes
        self.asked: list[tuple[str, ApprovalState]] = []
        self.servers: list[ProjectServer] = []
        self.notices: list[str] = []
        harness.factory.mcp_approvals = ServerApprovals(
            Approvals(harness.database), harness.project, notify=self.notices.append
        )
        harness.factory.ask_approval = self.ask

    async def ask(self, server: ProjectServer, state: ApprovalState) -> bool:
        self.asked.append((server.name, state))
        self.servers.append(server)
        return self.yes


@pytest.mark.parametrize("persist", [False, True])
async def test_an_own_server_serves_the_sub_agent_and_stops_when_it_ends(
    tmp_path: Path, persist: bool
) -> None:
    pid_file = tmp_path / "server.pid"
    harness = TreeHarness(tmp_path, models={})
    harness.write_agent("asker", agent_file(pid_file, persist=persist))
    approver = Approver(harness)
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
        assert approver.asked == [("mine", "new")]
        pid = int(pid_file.read_text())
        if persist:  # kept idle in the pool, with its server, for the next task
            assert alive(pid)
        else:
            assert await wait_until_dead(pid)
    finally:
        await harness.factory.close()
    assert await wait_until_dead(int(pid_file.read_text()))


async def test_a_project_agents_own_server_starts_only_once_approved_and_a_no_is_kept_until_it_changes(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "server.pid"
    harness = TreeHarness(tmp_path, models={})
    harness.write_agent("asker", agent_file(pid_file))
    policy = PermissionPolicy.from_config(["mcp__mine__echo"], [], [], project_root=str(tmp_path))
    try:
        without = harness.main(
            scripted(), policy=policy
        )  # no approvals at all: nothing a project defines starts
        await without.run("USER: go")
        assert not pid_file.exists()

        approver = declining = Approver(harness, yes=False)
        declined = harness.main(scripted(), policy=policy)
        await declined.run("USER: go")
        await declined.run("USER: again")
        assert not pid_file.exists() and approver.asked == [("mine", "new")]  # a no holds for the process
        [child, *_] = harness.sessions.children(declined.session_id)
        finished = [e for e in harness.events if isinstance(e, ToolFinished) and e.agent_id == child.id]
        assert [e.outcome for e in finished] != ["success"]

        approver = Approver(harness)  # ...and is kept: the next process does not ask, and says why
        kept = harness.main(scripted(), policy=policy)
        await kept.run("USER: go")
        assert not pid_file.exists() and approver.asked == []
        [notice] = approver.notices
        assert notice.startswith("MCP server mine (agent asker (") and "was declined, so it did not" in notice

        approver = Approver(harness)
        [server] = declining.servers
        Approvals(harness.database).approve("mcp_server", harness.project, server.name, server.digest)
        approved = harness.main(scripted(), policy=policy)
        await approved.run("USER: go")
        await approved.run("USER: again")
        assert pid_file.exists() and approver.asked == []  # approved as nestor mcp approve does

        harness.write_agent("asker", agent_file(pid_file).replace("  mine:\n", "  mine:\n    timeout: 20\n"))
        again = harness.main(scripted(), policy=policy)
        await again.run("USER: go")
        assert approver.asked == [("mine", "changed")]
    finally:
        await harness.factory.close()


async def test_with_nobody_to_ask_an_unapproved_server_is_named_once_with_the_command_that_approves_it(
    tmp_path: Path,
) -> None:
    harness = TreeHarness(tmp_path, models={})
    harness.write_agent("asker", agent_file(tmp_path / "server.pid"))
    approver = Approver(harness)
    harness.factory.ask_approval = None
    try:
        main = harness.main(scripted())
        await main.run("USER: go")
        await main.run("USER: again")
    finally:
        await harness.factory.close()
    path = tmp_path / ".nestor" / "agents" / "asker.md"
    assert approver.notices == [
        f"MCP server mine (agent asker ({path})) is not approved, so it did not start; "
        "`nestor mcp approve mine` shows its definition and approves it"
    ]
    assert not (tmp_path / "server.pid").exists()


async def test_a_tools_list_naming_one_of_its_servers_tools_gets_only_that_one(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    harness = TreeHarness(tmp_path, models={})
    text = agent_file(pid_file).replace(
        "persist: false\n", "persist: false\ntools: [write, mcp__mine__echo]\n"
    )
    harness.write_agent("asker", text)
    Approver(harness)
    model = scripted()
    policy = PermissionPolicy.from_config(["mcp__mine__echo"], [], [], project_root=str(tmp_path))
    main = harness.main(model, policy=policy)
    try:
        await main.run("USER: go")
    finally:
        await harness.factory.close()

    [child_request, *_] = [request for request in model.requests if "CHILD" in str(request.messages)]
    assert [name for name in child_request.tool_names if name.startswith("mcp__")] == ["mcp__mine__echo"]
