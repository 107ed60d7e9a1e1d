"""The agent tree over ACP: sub-agents' updates carry their parent's tool call, and a cancel stops a turn."""

from __future__ import annotations

import asyncio
from pathlib import Path

import acp
import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.acp.support import RecordingClient, acp_env, nestor_acp, until
from tests.cli.support import git_repo
from tests.server_routes import Route, router, task_call

pytestmark = pytest.mark.timeout(120)


async def test_three_parallel_sub_agents_show_inside_their_task_calls(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"src/a.py": "A = 1\n", "src/b.py": "B = 2\n", "src/c.py": "C = 3\n"})
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(
                tool_calls=tuple(
                    task_call(f"read {name}", f"CHILD {name}: read src/{name}.py", subagent_type="explore")
                    for name in "abc"
                )
            ),
            ServerReply(text="All three read."),
        ],
        **{
            f"CHILD {name}": [
                ServerReply(tool_calls=(ServerToolCall("view", {"path": f"src/{name}.py"}),)),
                ServerReply(text=f"{name.upper()} is set in src/{name}.py:1"),
            ]
            for name in "abc"
        },
    }
    client = RecordingClient()
    with ScriptedOpenAIServer(router(routes)) as server:
        async with nestor_acp(client, repo, acp_env(tmp_path, server)) as conn:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo))
            done = await conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("USER: read them")]
            )

    assert done.stop_reason == "end_turn"
    calls = client.of_kind("tool_call")
    tasks = {call["toolCallId"]: call for call in calls if call["rawInput"].get("subagent_type") == "explore"}
    assert len(tasks) == 3
    assert {task["title"] for task in tasks.values()} == {
        "explore · read a",
        "explore · read b",
        "explore · read c",
    }
    views = [call for call in calls if call["kind"] == "read"]
    assert len(views) == 3
    parents: dict[str, str] = {}
    for view in views:
        tree = view["_meta"]["nestor"]
        assert tree["agentType"] == "explore" and tree["depth"] == 1
        assert tree["parentAgentId"] == session.session_id
        assert tree["parentToolCallId"] in tasks
        assert view["toolCallId"].startswith(tree["agentId"] + "/")
        parents[tree["parentToolCallId"]] = view["locations"][0]["path"]
    assert sorted(parents.values()) == [str(repo / f"src/{name}.py") for name in "abc"]
    for task_id, path in parents.items():  # each card's progress names its own child's read
        progress = [
            update for update in client.of_kind("tool_call_update") if update["toolCallId"] == task_id
        ]
        texts = [part["content"]["text"] for update in progress for part in update.get("content", [])]
        assert any(f"✓ Read src/{Path(path).name}" in text for text in texts)
        assert progress[-1]["status"] == "completed"
    # The main agent's text is the message; the children's words stay in their cards.
    assert client.text() == "All three read."


async def test_cancel_mid_turn_stops_the_run_and_answers_cancelled(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    client = RecordingClient()
    stalled = ServerReply(text="I am thinking about this for a long while", chunks=6, stall_after_chunks=2)
    with ScriptedOpenAIServer([stalled, ServerReply(text="second prompt answered")]) as server:
        async with nestor_acp(client, repo, acp_env(tmp_path, server)) as conn:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo))
            prompt = asyncio.create_task(
                conn.prompt(session_id=session.session_id, prompt=[acp.text_block("think")])
            )
            await until(lambda: client.of_kind("agent_message_chunk"))
            await conn.cancel(session_id=session.session_id)
            cancelled = await asyncio.wait_for(prompt, 30)
            again = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("again")])

    assert cancelled.stop_reason == "cancelled"
    assert again.stop_reason == "end_turn"
    assert client.text().endswith("second prompt answered")


async def test_cancelling_one_task_call_stops_that_sub_agent_and_the_others_finish(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(
                tool_calls=(
                    task_call("slow one", "SLOW: think long", subagent_type="explore"),
                    task_call("quick one", "QUICK: answer", subagent_type="explore"),
                )
            ),
            ServerReply(text="One was stopped, one answered."),
        ],
        "SLOW": [ServerReply(text="never finished", chunks=4, stall_after_chunks=1)],
        "QUICK": [ServerReply(text="quick answer", delay=1.0)],
    }
    client = RecordingClient()
    with ScriptedOpenAIServer(router(routes)) as server:
        async with nestor_acp(client, repo, acp_env(tmp_path, server)) as conn:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo))
            prompt = asyncio.create_task(
                conn.prompt(session_id=session.session_id, prompt=[acp.text_block("USER: two tasks")])
            )
            slow = lambda: [c for c in client.of_kind("tool_call") if c["title"] == "explore · slow one"]  # noqa: E731
            await until(slow)
            slow_id = slow()[0]["toolCallId"]
            # Its sub-agent runs once its card shows progress.
            await until(lambda: any(u["toolCallId"] == slow_id for u in client.of_kind("tool_call_update")))
            stopped = await conn.ext_method(  # on the wire: _nestor/cancel_task
                "nestor/cancel_task", {"sessionId": session.session_id, "toolCallId": slow_id}
            )
            done = await asyncio.wait_for(prompt, 30)

    assert stopped == {"cancelled": True}
    assert done.stop_reason == "end_turn"
    assert client.text() == "One was stopped, one answered."
    finals = {
        u["toolCallId"]: u
        for u in client.of_kind("tool_call_update")
        if u.get("status") in ("completed", "failed")
    }
    quick = next(c for c in client.of_kind("tool_call") if c["title"] == "explore · quick one")
    assert "quick answer" in str(finals[quick["toolCallId"]]["content"])
    assert "cancelled" in str(finals[slow_id]["content"])


async def test_a_background_agent_shows_in_its_task_card_with_its_notice(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"src/db.py": "# TODO: index\n"})

    def after_notice(body: dict[str, object]) -> ServerReply:
        assert "[Background sub-agent" in str(body["messages"])
        return ServerReply(text="The scan found one TODO.")

    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(
                tool_calls=(task_call("scan todos", "SCAN: find TODO markers", run_in_background=True),)
            ),
            ServerReply(text="Started a scan."),
            after_notice,
        ],
        "SCAN": [
            ServerReply(tool_calls=(ServerToolCall("grep", {"pattern": "TODO"}),), delay=0.3),
            ServerReply(text="One TODO, in src/db.py:1"),
        ],
    }
    client = RecordingClient()
    with ScriptedOpenAIServer(router(routes)) as server:
        async with nestor_acp(client, repo, acp_env(tmp_path, server)) as conn:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo))
            done = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("USER: scan")])

    assert done.stop_reason == "end_turn"
    assert client.text() == "Started a scan.\n\nThe scan found one TODO."
    [task] = [call for call in client.of_kind("tool_call") if call["kind"] == "think"]
    [grep] = [call for call in client.of_kind("tool_call") if call["kind"] == "search"]
    assert grep["_meta"]["nestor"]["background"] is True
    assert grep["_meta"]["nestor"]["parentToolCallId"] == task["toolCallId"]
    card = [u for u in client.of_kind("tool_call_update") if u["toolCallId"] == task["toolCallId"]]
    assert "notice to the parent" in card[-1]["content"][0]["content"]["text"]
