"""``nestor acp`` end to end: the SDK's client spawns it and drives sessions against a scripted server."""

from __future__ import annotations

from pathlib import Path

import acp
import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.acp.support import RecordingClient, acp_env, nestor_acp
from tests.cli.support import git_repo
from tests.server_routes import Route, router

pytestmark = pytest.mark.timeout(120)


async def test_initialize_negotiates_the_version_down_and_says_what_nestor_offers(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    with ScriptedOpenAIServer([]) as server:
        async with nestor_acp(RecordingClient(), repo, acp_env(tmp_path, server)) as conn:
            asked_later = await conn.initialize(protocol_version=7)
            asked_v1 = await conn.initialize(protocol_version=1)

    assert asked_later.protocol_version == 1
    assert asked_v1.protocol_version == 1
    capabilities = asked_later.agent_capabilities
    assert capabilities is not None and capabilities.load_session is True
    assert capabilities.prompt_capabilities is not None
    assert capabilities.prompt_capabilities.embedded_context is True
    assert capabilities.prompt_capabilities.image is True and not capabilities.prompt_capabilities.audio
    sessions = capabilities.session_capabilities
    assert sessions is not None
    assert sessions.list is not None and sessions.resume is not None and sessions.fork is not None
    assert asked_later.agent_info is not None and asked_later.agent_info.name == "nestor"


async def test_a_prompt_streams_the_answer_and_ends_the_turn(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    client = RecordingClient()
    script = [ServerReply(text="Hello from nestor, in pieces.", chunks=4)]
    with ScriptedOpenAIServer(script) as server:
        async with nestor_acp(client, repo, acp_env(tmp_path, server)) as conn:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo))
            done = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("say hello")])

    assert done.stop_reason == "end_turn"
    assert client.text() == "Hello from nestor, in pieces."
    assert "say hello" in str(server.requests[0]["messages"])
    commands = client.of_kind("available_commands_update")
    assert {command["name"] for command in commands[0]["availableCommands"]} == {"compact", "cost", "session"}
    usage = client.of_kind("usage_update")[-1]
    assert usage["used"] > 0 and usage["_meta"]["nestor"]["usage"]["requests"] >= 1


async def test_an_edit_streams_its_tool_call_with_a_diff_after_the_editor_allowed_it(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"src/app.py": "def greet():\n    return 'hi'\n"})
    client = RecordingClient(answers=["allow_once"])
    script = [
        ServerReply(
            tool_calls=(
                ServerToolCall(
                    "edit",
                    {"path": "src/app.py", "old_string": "return 'hi'", "new_string": "return 'hello'"},
                ),
            )
        ),
        ServerReply(text="Changed the greeting."),
    ]
    with ScriptedOpenAIServer(script) as server:
        async with nestor_acp(client, repo, acp_env(tmp_path, server)) as conn:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo))
            done = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("greet louder")])

    assert done.stop_reason == "end_turn"
    assert (repo / "src/app.py").read_text() == "def greet():\n    return 'hello'\n"
    [started] = client.of_kind("tool_call")
    path = str(repo / "src/app.py")
    assert started["kind"] == "edit" and started["title"] == "Edit src/app.py"
    assert started["locations"] == [{"path": path, "line": 2}]
    diff = {"type": "diff", "path": path, "oldText": "return 'hi'", "newText": "return 'hello'"}
    assert started["content"] == [diff]
    [question] = client.questions
    assert question["toolCall"]["toolCallId"] == started["toolCallId"]
    assert question["toolCall"]["content"][0] == diff
    assert [option["kind"] for option in question["options"]] == ["allow_once", "allow_always", "reject_once"]
    assert question["options"][1]["name"] == "Allow for this session: edit(" + path + ")"
    finished = client.of_kind("tool_call_update")[-1]
    assert finished["status"] == "completed" and finished["content"] == [diff]


async def test_a_refusal_ends_the_turn_as_refusal_and_the_session_goes_on(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    client = RecordingClient()
    refusal = "I'm sorry, I can't help with that."
    # One conversation: every request starts with its first prompt.
    replies: list[ServerReply | Route] = [
        ServerReply(refusal=refusal),
        ServerReply(finish_reason="content_filter"),
        ServerReply(text="Fine."),
    ]
    routes: dict[str, list[ServerReply | Route]] = {"USER": replies}
    with ScriptedOpenAIServer(router(routes)) as server:
        async with nestor_acp(client, repo, acp_env(tmp_path, server)) as conn:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo))
            refused = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("USER: bad")])
            shown = client.text()
            filtered = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("also bad")])
            after = await conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block("something else")]
            )

    assert (refused.stop_reason, filtered.stop_reason, after.stop_reason) == (
        "refusal",
        "refusal",
        "end_turn",
    )
    assert shown == refusal  # the refusal is the answer the editor shows
    assert client.text().endswith("Fine.")
