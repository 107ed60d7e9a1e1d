"""Sessions over ACP: load replays the whole history, list, resume, fork and close."""

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


async def test_load_replays_the_history_list_resume_and_fork(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"src/app.py": "def greet():\n    return 'hi'\n"})
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(tool_calls=(ServerToolCall("view", {"path": "src/app.py"}),)),
            ServerReply(
                tool_calls=(task_call("find callers", "CHILD: who calls greet?", subagent_type="explore"),)
            ),
            ServerReply(text="greet() returns 'hi'; nobody calls it."),
            ServerReply(text="the fork answers"),  # the fork's conversation starts as the original's
        ],
        "CHILD": [
            ServerReply(tool_calls=(ServerToolCall("grep", {"pattern": "greet"}),)),
            ServerReply(text="only its definition"),
        ],
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        env = acp_env(tmp_path, server)
        first = RecordingClient()
        async with nestor_acp(first, repo, env) as conn:
            await conn.initialize(protocol_version=1)
            created = await conn.new_session(cwd=str(repo))
            await conn.prompt(
                session_id=created.session_id, prompt=[acp.text_block("USER: what does greet do?")]
            )
        session_id = created.session_id

        loader = RecordingClient()
        async with nestor_acp(loader, repo, env) as conn:
            await conn.initialize(protocol_version=1)
            listed = await conn.list_sessions(cwd=str(repo))
            await conn.load_session(cwd=str(repo), session_id=session_id)
            replayed = list(loader.updates)
            await conn.close_session(session_id=session_id)
            resumed = await conn.resume_session(cwd=str(repo), session_id=session_id)
            after_resume = [u["sessionUpdate"] for u in loader.updates[len(replayed) :]]
            assert set(after_resume) <= {"available_commands_update"}  # resuming replays nothing
            fork = await conn.fork_session(cwd=str(repo), session_id=session_id)
            forked = await conn.prompt(session_id=fork.session_id, prompt=[acp.text_block("MORE: go on")])

    assert [item.session_id for item in listed.sessions] == [session_id]
    assert listed.sessions[0].cwd == str(repo)
    kinds = [
        update["sessionUpdate"]
        for update in replayed
        if update["sessionUpdate"] != "available_commands_update"
    ]
    assert kinds[0] == "user_message_chunk" and replayed[1]["content"]["text"] == "USER: what does greet do?"
    live = [
        update for update in first.updates if update["sessionUpdate"] in ("tool_call", "agent_message_chunk")
    ]
    again = [update for update in replayed if update["sessionUpdate"] in ("tool_call", "agent_message_chunk")]
    assert [(u["sessionUpdate"], u.get("title"), u.get("toolCallId")) for u in again] == [
        (u["sessionUpdate"], u.get("title"), u.get("toolCallId")) for u in live
    ]
    grep = next(update for update in again if update.get("kind") == "search")
    task_id = next(
        update["toolCallId"] for update in again if update.get("title") == "explore · find callers"
    )
    assert grep["_meta"]["nestor"]["parentToolCallId"] == task_id
    view_result = next(
        update
        for update in replayed
        if update["sessionUpdate"] == "tool_call_update" and update["toolCallId"] == again[0]["toolCallId"]
    )
    assert "return 'hi'" in view_result["content"][0]["content"]["text"]  # the whole result, not a preview
    assert resumed.modes is not None and resumed.modes.current_mode_id == "ask"
    assert fork.session_id != session_id and forked.stop_reason == "end_turn"
    fork_request = server.requests[-1]
    assert "what does greet do?" in str(fork_request["messages"]) and "MORE: go on" in str(
        fork_request["messages"]
    )


async def test_loading_an_unknown_session_is_an_error_with_a_cause(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    with ScriptedOpenAIServer([]) as server:
        async with nestor_acp(RecordingClient(), repo, acp_env(tmp_path, server)) as conn:
            await conn.initialize(protocol_version=1)
            with pytest.raises(acp.RequestError) as raised:
                await conn.load_session(cwd=str(repo), session_id="ses_nothere")
            with pytest.raises(acp.RequestError) as relative:
                await conn.new_session(cwd="relative/dir")

    assert "ses_nothere" in str(raised.value)
    assert relative.value.code == -32602


async def test_choosing_another_model_goes_on_with_the_same_history(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    routes: dict[str, list[ServerReply | Route]] = {
        "remember": [ServerReply(text="first answer"), ServerReply(text="second answer")]
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        async with nestor_acp(RecordingClient(), repo, acp_env(tmp_path, server)) as conn:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo))
            options = {option.id: option for option in session.config_options or []}
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("remember 42")])
            changed = await conn.set_config_option(
                config_id="large_model", session_id=session.session_id, value="openai-chat:gpt-4o-mini"
            )
            await conn.set_config_option(
                config_id="mode", session_id=session.session_id, value="accept_edits"
            )
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("what was it?")])

    assert options["large_model"].current_value == "openai-chat:gpt-4o"
    assert options["mode"].current_value == "ask"
    now = {option.id: option.current_value for option in changed.config_options}
    assert now["large_model"] == "openai-chat:gpt-4o-mini"
    assert [request["model"] for request in server.requests if "remember 42" in str(request["messages"])][
        -1
    ] == ("gpt-4o-mini")


async def test_closing_a_session_while_it_prompts_ends_the_prompt_cancelled(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    client = RecordingClient()
    stalled = ServerReply(text="a long answer that never ends", chunks=4, stall_after_chunks=1)
    with ScriptedOpenAIServer([stalled]) as server:
        async with nestor_acp(client, repo, acp_env(tmp_path, server), "--yolo") as conn:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo))
            prompt = asyncio.create_task(
                conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")])
            )
            await until(lambda: client.of_kind("agent_message_chunk"))
            await conn.close_session(session_id=session.session_id)
            done = await asyncio.wait_for(prompt, 30)
            listed = await conn.list_sessions(cwd=str(repo))

    assert session.modes is not None and session.modes.current_mode_id == "yolo"
    assert done.stop_reason == "cancelled"
    assert [item.session_id for item in listed.sessions] == [session.session_id]  # closed, still stored
