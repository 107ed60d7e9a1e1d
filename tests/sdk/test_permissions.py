"""``can_use_tool`` and ``permission_mode``: what nestor's rules leave open, answered by a program."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nestor.api import (
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    ScriptedOpenAIServer,
    ServerReply,
    ServerToolCall,
    ToolPermissionContext,
)
from nestor.testing import first_user_text
from tests.sdk.support import Routes, collect, options
from tests.server_routes import router, task_call, tool_texts

WRITE = ServerToolCall("write", {"path": "notes.txt", "content": "hi\n"})


def write_then_answer(prompt: str = "write notes") -> Routes:
    return {prompt: [ServerReply(tool_calls=(WRITE,)), ServerReply(text="Done.")]}


def last_request(server: ScriptedOpenAIServer, prompt: str) -> dict[str, Any]:
    """The last request of the conversation ``prompt`` started (not the session title's)."""
    return [body for body in server.requests if first_user_text(body) == prompt][-1]


class Recorder:
    """A program's ``can_use_tool``: records what it is asked and answers ``result``."""

    def __init__(self, result: PermissionResult) -> None:
        self.result = result
        self.asked: list[tuple[str, dict[str, Any], ToolPermissionContext]] = []

    async def __call__(
        self, tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        self.asked.append((tool_name, tool_input, context))
        return self.result


async def test_can_use_tool_allows_a_write_and_is_told_the_call(tmp_path: Path) -> None:
    callback = Recorder(PermissionResultAllow())
    with ScriptedOpenAIServer(router(write_then_answer())) as server:
        messages = await collect("write notes", options(tmp_path, server, can_use_tool=callback))

    assert (tmp_path / "project" / "notes.txt").read_text(encoding="utf-8") == "hi\n"
    [(name, tool_input, context)] = callback.asked
    assert name == "write" and tool_input == {"path": "notes.txt", "content": "hi\n"}
    assert context.agent_type == "coder" and context.parent_tool_use_id is None and context.tool_use_id
    assert context.target.endswith("notes.txt") and context.agent_id == messages[-1].session_id  # type: ignore[union-attr]


async def test_can_use_tool_denies_with_its_message_to_the_model(tmp_path: Path) -> None:
    callback = Recorder(PermissionResultDeny(message="Not in this repository, please."))
    with ScriptedOpenAIServer(router(write_then_answer())) as server:
        messages = await collect("write notes", options(tmp_path, server, can_use_tool=callback))
        second = last_request(server, "write notes")

    assert not (tmp_path / "project" / "notes.txt").exists()
    assert "Not in this repository, please." in tool_texts(second)
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "success"


async def test_a_deny_that_interrupts_stops_the_query(tmp_path: Path) -> None:
    callback = Recorder(PermissionResultDeny(message="Stop.", interrupt=True))
    with ScriptedOpenAIServer(router(write_then_answer())) as server:
        messages = await collect("write notes", options(tmp_path, server, can_use_tool=callback))
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.stop_reason == "cancelled" and result.is_error


async def test_an_allow_with_changed_input_is_refused_and_the_model_told_why(tmp_path: Path) -> None:
    callback = Recorder(PermissionResultAllow(updated_input={"path": "other.txt", "content": "hi\n"}))
    with ScriptedOpenAIServer(router(write_then_answer())) as server:
        await collect("write notes", options(tmp_path, server, can_use_tool=callback))
        second = last_request(server, "write notes")
    project = tmp_path / "project"
    assert not (project / "notes.txt").exists() and not (project / "other.txt").exists()
    assert "changed this call's input" in tool_texts(second)


async def test_a_failing_callback_refuses_the_call(tmp_path: Path) -> None:
    async def broken(
        tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        raise RuntimeError("oops")

    with ScriptedOpenAIServer(router(write_then_answer())) as server:
        await collect("write notes", options(tmp_path, server, can_use_tool=broken))
        second = last_request(server, "write notes")
    assert not (tmp_path / "project" / "notes.txt").exists()
    assert "can_use_tool failed (RuntimeError: oops)" in tool_texts(second)


async def test_a_sub_agents_question_names_the_sub_agent_and_its_task_call(tmp_path: Path) -> None:
    routes: Routes = {
        "delegate": [
            ServerReply(tool_calls=(task_call("write", "GENERAL write notes", subagent_type="general"),)),
            ServerReply(text="Delegated."),
        ],
        "GENERAL": [ServerReply(tool_calls=(WRITE,)), ServerReply(text="Written.")],
    }
    callback = Recorder(PermissionResultAllow())
    with ScriptedOpenAIServer(router(routes)) as server:
        await collect("delegate", options(tmp_path, server, can_use_tool=callback))
    [(name, _input, context)] = callback.asked
    assert name == "write" and context.agent_type == "general" and context.parent_tool_use_id
    assert (tmp_path / "project" / "notes.txt").exists()


async def test_without_a_callback_what_the_rules_leave_open_is_refused(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(router(write_then_answer())) as server:
        await collect("write notes", options(tmp_path, server))
    assert not (tmp_path / "project" / "notes.txt").exists()


async def test_accept_edits_writes_inside_the_project_without_asking(tmp_path: Path) -> None:
    callback = Recorder(PermissionResultDeny(message="never asked"))
    with ScriptedOpenAIServer(router(write_then_answer())) as server:
        await collect(
            "write notes", options(tmp_path, server, permission_mode="acceptEdits", can_use_tool=callback)
        )
    assert (tmp_path / "project" / "notes.txt").exists() and callback.asked == []


async def test_bypass_permissions_runs_what_no_rule_denies_but_deny_rules_hold(tmp_path: Path) -> None:
    routes: Routes = {
        "write notes": [
            ServerReply(tool_calls=(WRITE, ServerToolCall("write", {"path": "secret.txt", "content": "x"}))),
            ServerReply(text="Done."),
        ]
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        opts = options(
            tmp_path, server, permission_mode="bypassPermissions", disallowed_tools=["Write(secret.txt)"]
        )
        await collect("write notes", opts)
    project = tmp_path / "project"
    assert (project / "notes.txt").exists() and not (project / "secret.txt").exists()


async def test_a_write_into_a_git_dir_is_never_the_callbacks_to_allow(tmp_path: Path) -> None:
    hook = ServerToolCall("write", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\necho owned\n"})
    routes: Routes = {"add a hook": [ServerReply(tool_calls=(hook,)), ServerReply(text="Done.")]}
    callback = Recorder(PermissionResultAllow())
    with ScriptedOpenAIServer(router(routes)) as server:
        opts = options(tmp_path, server, can_use_tool=callback)
        assert opts.cwd is not None
        (Path(opts.cwd) / ".git" / "hooks").mkdir(parents=True)
        await collect("add a hook", opts)
        last = last_request(server, "add a hook")
    assert not (tmp_path / "project" / ".git" / "hooks" / "pre-commit").exists()
    assert callback.asked == [] and "Only a person may allow this" in tool_texts(last)
