"""A project's hooks in ``nestor acp``: the editor approves each (yes/no) before the first prompt."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import acp
import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.acp.support import Answer, RecordingClient, acp_env, nestor_acp
from tests.cli.support import git_repo

pytestmark = pytest.mark.timeout(180)


def project(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose .claude/settings.json has a PreToolUse hook on Bash that writes a marker."""
    marker = tmp_path / "marker"
    hook = {"type": "command", "command": f"echo ran >> {marker}"}
    settings = json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}})
    return git_repo(tmp_path / "repo", {".claude/settings.json": settings}), marker


def bash_then_done() -> list[ServerReply]:
    call = ServerToolCall("bash", {"command": "echo hi"})
    return [ServerReply(tool_calls=(call,)), ServerReply(text="done")]


async def session(tmp_path: Path, repo: Path, answers: list[Answer], *flags: str) -> RecordingClient:
    """One ``nestor acp`` (in the yolo mode: the bash call itself is not asked about) and one prompt."""
    client = RecordingClient(answers=answers)
    with ScriptedOpenAIServer(bash_then_done()) as server:
        async with nestor_acp(client, repo, acp_env(tmp_path, server), "--yolo", *flags) as conn:
            await conn.initialize(protocol_version=1)
            opened = await conn.new_session(cwd=str(repo))
            done = await conn.prompt(session_id=opened.session_id, prompt=[acp.text_block("go")])
    assert done.stop_reason == "end_turn"
    return client


async def test_the_editor_approves_a_hook_once_it_runs_and_a_next_session_does_not_ask(
    tmp_path: Path,
) -> None:
    repo, marker = project(tmp_path)

    first = await session(tmp_path, repo, ["allow_once"], "--trust")
    [question] = first.questions  # the yolo mode answers the bash call, never the hook's question
    assert [option["name"] for option in question["options"]] == ["Yes", "No"]
    text = question["toolCall"]["content"][0]["content"]["text"]
    assert "Run the project's hook PreToolUse[Bash] in .claude/settings.json" in text
    assert "outside the sandbox" in text and f"echo ran >> {marker}" in text
    assert marker.read_text() == "ran\n"

    second = await session(tmp_path, repo, [], "--trust")
    assert second.questions == []
    assert marker.read_text() == "ran\nran\n"


async def test_a_hook_the_editor_declines_does_not_run(tmp_path: Path) -> None:
    repo, marker = project(tmp_path)

    client = await session(tmp_path, repo, ["reject"], "--trust")

    assert len(client.questions) == 1
    assert not marker.exists()


async def test_an_untrusted_folders_hooks_are_never_asked_about_nor_run(tmp_path: Path) -> None:
    repo, marker = project(tmp_path)

    client = await session(tmp_path, repo, [])

    assert client.questions == []
    assert not marker.exists()


async def test_cancelling_the_prompt_while_a_hook_is_asked_about_asks_again_at_the_next(
    tmp_path: Path,
) -> None:
    repo, marker = project(tmp_path)
    client = RecordingClient(answers=["allow_once", "allow_once"])
    client.hold_questions = asyncio.Event()
    with ScriptedOpenAIServer(bash_then_done()) as server:
        async with nestor_acp(client, repo, acp_env(tmp_path, server), "--yolo", "--trust") as conn:
            await conn.initialize(protocol_version=1)
            opened = await conn.new_session(cwd=str(repo))
            prompt = asyncio.create_task(
                conn.prompt(session_id=opened.session_id, prompt=[acp.text_block("go")])
            )
            await asyncio.wait_for(client.question_asked.wait(), 30)
            await conn.cancel(session_id=opened.session_id)
            cancelled = await asyncio.wait_for(prompt, 30)
            client.hold_questions.set()  # the editor answers late: nothing is approved by it
            await asyncio.sleep(0.5)
            assert not server.requests and not marker.exists()
            again = await conn.prompt(session_id=opened.session_id, prompt=[acp.text_block("go")])

    assert (cancelled.stop_reason, again.stop_reason) == ("cancelled", "end_turn")
    assert len(client.questions) == 2
    assert marker.read_text() == "ran\n"
