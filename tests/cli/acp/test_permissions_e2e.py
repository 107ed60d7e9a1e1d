"""Permission questions in ``nestor acp``: answered each way in the editor, refused on cancel; modes."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import acp
import pytest
from acp.schema import McpServerStdio

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.acp.support import Answer, RecordingClient, acp_env, nestor_acp
from tests.cli.support import git_repo
from tests.server_routes import tool_texts
from tests.tools.mcp.support import DEMO_SERVER

pytestmark = pytest.mark.timeout(120)


RULES = '[permissions]\nask = ["bash(touch asked.txt)"]\ndeny = ["bash(touch denied.txt)"]\n'


def bash(command: str) -> ServerReply:
    return ServerReply(tool_calls=(ServerToolCall("bash", {"command": command}),))


async def run_prompt(
    tmp_path: Path, script: list[ServerReply], answers: list[Answer], *, mode: str | None = None
) -> tuple[RecordingClient, ScriptedOpenAIServer, str, Path]:
    repo = git_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    client = RecordingClient(answers=answers)
    with ScriptedOpenAIServer(script) as server:
        async with nestor_acp(client, repo, acp_env(tmp_path, server)) as conn:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo))
            if mode is not None:
                await conn.set_session_mode(session_id=session.session_id, mode_id=mode)
            done = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")])
    return client, server, done.stop_reason, repo


async def test_a_rejected_command_does_not_run_and_the_model_is_told(tmp_path: Path) -> None:
    script = [bash("touch made.txt"), ServerReply(text="ok, I will not.")]
    client, server, stop, repo = await run_prompt(tmp_path, script, ["reject"])

    assert stop == "end_turn"
    assert not (repo / "made.txt").exists()
    [question] = client.questions
    assert question["toolCall"]["kind"] == "execute"
    assert question["toolCall"]["content"][0]["content"]["text"] == "$ touch made.txt"
    assert "The user denied" in tool_texts(server.requests[1])
    assert client.of_kind("tool_call_update")[-1]["status"] == "failed"


async def test_a_question_the_editor_cancels_is_a_refusal(tmp_path: Path) -> None:
    script = [bash("touch made.txt"), ServerReply(text="stopped.")]
    client, server, _stop, repo = await run_prompt(tmp_path, script, [None])

    assert len(client.questions) == 1
    assert not (repo / "made.txt").exists()
    assert "The user denied" in tool_texts(server.requests[1])


async def test_allow_for_the_session_asks_once_for_the_same_command(tmp_path: Path) -> None:
    script = [bash("touch one.txt"), bash("touch one.txt"), ServerReply(text="done twice.")]
    client, _server, stop, repo = await run_prompt(tmp_path, script, ["allow_session"])

    assert stop == "end_turn"
    assert (repo / "one.txt").exists()
    assert len(client.questions) == 1
    assert client.questions[0]["options"][1]["name"] == "Allow for this session: bash(touch one.txt)"


async def test_accept_edits_writes_without_asking_but_still_asks_for_commands(tmp_path: Path) -> None:
    script = [
        ServerReply(tool_calls=(ServerToolCall("write", {"path": "notes.md", "content": "hi\n"}),)),
        bash("touch made.txt"),
        ServerReply(text="wrote it."),
    ]
    client, _server, _stop, repo = await run_prompt(tmp_path, script, ["reject"], mode="accept_edits")

    assert (repo / "notes.md").read_text() == "hi\n"
    assert [question["toolCall"]["kind"] for question in client.questions] == ["execute"]
    assert not (repo / "made.txt").exists()


@pytest.mark.parametrize("mode", ["accept_edits", "yolo"])
async def test_no_mode_answers_a_write_into_the_git_dir_by_itself(tmp_path: Path, mode: str) -> None:
    # A hook or core.fsmonitor written into .git runs at the user's next git, outside any sandbox:
    # the editor's user is asked, whatever the mode.
    hook = {"path": ".git/hooks/post-checkout", "content": "#!/bin/sh\ntouch pwned\n"}
    setting = {"path": ".git/config", "content": "[core]\n\tfsmonitor = touch pwned\n"}
    script = [
        ServerReply(tool_calls=(ServerToolCall("write", hook), ServerToolCall("write", setting))),
        ServerReply(tool_calls=(ServerToolCall("write", {"path": "notes.md", "content": "hi\n"}),)),
        ServerReply(text="done."),
    ]
    client, _server, _stop, repo = await run_prompt(tmp_path, script, ["reject", "reject"], mode=mode)

    assert sorted(question["toolCall"]["rawInput"]["target"] for question in client.questions) == [
        str(repo / ".git" / "config"),
        str(repo / ".git" / "hooks" / "post-checkout"),
    ]
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()
    assert "fsmonitor" not in (repo / ".git" / "config").read_text()
    assert (repo / "notes.md").read_text() == "hi\n"  # an ordinary edit is still the mode's to answer


async def test_yolo_asks_nothing_but_an_ask_rule_still_asks_and_a_deny_rule_refuses(tmp_path: Path) -> None:
    repo = git_repo(
        tmp_path / "repo",
        {"nestor.toml": RULES},
    )
    client = RecordingClient(answers=["reject"])
    script = [
        bash("touch free.txt"),
        bash("touch asked.txt"),
        bash("touch denied.txt"),
        ServerReply(text="done."),
    ]
    with ScriptedOpenAIServer(script) as server:
        env = acp_env(tmp_path, server)
        async with nestor_acp(client, repo, env, "--trust") as conn:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo))
            assert session.modes is not None and session.modes.current_mode_id == "ask"
            await conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")])

    assert (repo / "free.txt").exists()
    assert [question["toolCall"]["content"][0]["content"]["text"] for question in client.questions] == [
        "$ touch asked.txt"
    ]
    assert not (repo / "asked.txt").exists() and not (repo / "denied.txt").exists()
    assert "Permission denied by rule" in tool_texts(server.requests[3])


async def test_cancelling_the_prompt_withdraws_its_question_and_answers_cancelled(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    client = RecordingClient(answers=["allow_once"])
    client.hold_questions = asyncio.Event()
    with ScriptedOpenAIServer([bash("touch made.txt"), ServerReply(text="never")]) as server:
        async with nestor_acp(client, repo, acp_env(tmp_path, server)) as conn:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo))
            prompt = asyncio.create_task(
                conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")])
            )
            await asyncio.wait_for(client.question_asked.wait(), 30)
            await conn.cancel(session_id=session.session_id)
            done = await asyncio.wait_for(prompt, 30)
            client.hold_questions.set()  # the editor answers late: nothing runs
            await asyncio.sleep(0.5)

    assert done.stop_reason == "cancelled"
    assert not (repo / "made.txt").exists()
    assert len(server.requests) == 1


async def test_an_mcp_server_the_client_passes_gives_the_session_its_tools(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    client = RecordingClient(answers=["allow_once"])
    script = [
        ServerReply(tool_calls=(ServerToolCall("mcp__editor__echo", {"text": "from the model"}),)),
        ServerReply(text="The server said it."),
    ]
    server_entry = McpServerStdio(name="editor", command=sys.executable, args=[str(DEMO_SERVER)], env=[])
    with ScriptedOpenAIServer(script) as server:
        async with nestor_acp(client, repo, acp_env(tmp_path, server)) as conn:
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(repo), mcp_servers=[server_entry])
            done = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("echo")])

    assert done.stop_reason == "end_turn"
    assert "mcp__editor__echo" in {tool["function"]["name"] for tool in server.requests[0]["tools"]}
    assert [question["toolCall"]["title"] for question in client.questions] == ["mcp__editor__echo"]
    assert "echo: from the model" in tool_texts(server.requests[1])
