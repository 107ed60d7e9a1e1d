"""One dispatcher for shell hooks and in-process callbacks: parallel, once per command, timed out."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from nestor.api import App, Event, HookContext, HookMatcher, PermissionRequested, ServerReply, ServerToolCall
from nestor.config.hooks import ConfiguredHook
from nestor.runtime.features.hook_events.dispatcher import HookDispatcher
from tests.runtime.features.hook_events.support import Project, hooks_toml, script, tool_results


def _hook(event: str, command: str, *, matcher: str | None = None, timeout_s: float = 60) -> ConfiguredHook:
    return ConfiguredHook(event, matcher, command, timeout_s, "test", project=False)


async def test_matching_hooks_run_in_parallel_and_identical_commands_once(tmp_path: Path) -> None:
    log = tmp_path / "log"
    slow = f"sleep 1; echo ran >> {log}"
    hooks = [_hook("PreToolUse", slow, matcher="Bash"), _hook("PreToolUse", slow, matcher="bash")]
    hooks.append(_hook("PreToolUse", f"sleep 1; echo other >> {log}", matcher="Bash"))
    dispatcher = HookDispatcher.of(hooks, tmp_path)
    started = time.monotonic()
    outcome = await dispatcher.fire("PreToolUse", {"hook_event_name": "PreToolUse"}, match=("bash", "Bash"))
    elapsed = time.monotonic() - started
    assert outcome.ran == 2 and sorted(log.read_text().split()) == ["other", "ran"]
    assert elapsed < 1.9  # two one-second hooks side by side, not one after the other


async def test_a_hanging_hook_is_killed_with_its_children_and_reported_without_blocking(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "child-survived"
    hanging = f"(sleep 3; touch {marker}) & sleep 30"
    dispatcher = HookDispatcher.of([_hook("Stop", hanging, timeout_s=0.5)], tmp_path)
    started = time.monotonic()
    outcome = await dispatcher.fire("Stop", {"hook_event_name": "Stop"})
    assert time.monotonic() - started < 5
    assert not outcome.blocked and outcome.decisions[0][1] == {
        "error": "timed out after 0.5 s and was stopped"
    }
    assert outcome.system_messages[0].endswith(": timed out after 0.5 s and was stopped")
    await asyncio.sleep(3.5)
    assert not marker.exists()  # its process group was killed, the background child too


async def test_exit_codes_other_than_0_and_2_are_errors_shown_and_nothing_is_blocked(tmp_path: Path) -> None:
    dispatcher = HookDispatcher.of([_hook("PreToolUse", "echo broken >&2; exit 1")], tmp_path)
    outcome = await dispatcher.fire("PreToolUse", {"hook_event_name": "PreToolUse"})
    assert outcome.permission is None and not outcome.blocked
    assert outcome.system_messages == ["hook echo broken >&2; exit 1: exit code 1: broken"]


async def test_hooks_run_in_the_project_root_with_its_variables(tmp_path: Path) -> None:
    out = tmp_path / "seen"
    command = f'echo "$PWD|$CLAUDE_PROJECT_DIR|$NESTOR_PROJECT_DIR" > {out}'
    await HookDispatcher.of([_hook("SessionStart", command)], tmp_path).fire("SessionStart", {})
    root = str(tmp_path)
    assert out.read_text().strip() == f"{root}|{root}|{root}"


async def test_a_callback_and_a_shell_hook_answer_through_the_same_reader(tmp_path: Path) -> None:
    seen: list[tuple[dict[str, Any], str | None]] = []

    async def deny(payload: dict[str, Any], tool_use_id: str | None, context: HookContext) -> dict[str, Any]:
        seen.append((payload, tool_use_id))
        specific = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "cb",
        }
        return {"hookSpecificOutput": specific, "systemMessage": "from the callback"}

    shell = _hook("PreToolUse", "echo 'from the shell' >&2; exit 2")
    dispatcher = HookDispatcher.of([shell], tmp_path, {"PreToolUse": [HookMatcher("Bash", [deny])]})
    outcome = await dispatcher.fire(
        "PreToolUse", {"tool_name": "bash"}, match=("bash", "Bash"), tool_use_id="t1"
    )
    assert outcome.permission == "deny" and outcome.permission_reasons == ["from the shell", "cb"]
    assert outcome.system_messages == ["from the callback"] and seen == [({"tool_name": "bash"}, "t1")]


async def test_a_callback_that_raises_or_hangs_is_an_error_not_a_crash(tmp_path: Path) -> None:
    async def boom(payload: dict[str, Any], tool_use_id: str | None, context: HookContext) -> dict[str, Any]:
        raise RuntimeError("oops")

    async def hang(payload: dict[str, Any], tool_use_id: str | None, context: HookContext) -> dict[str, Any]:
        await asyncio.sleep(30)
        return {}

    dispatcher = HookDispatcher({"Stop": [HookMatcher(None, [boom]), HookMatcher(None, [hang], timeout=0.2)]})
    outcome = await dispatcher.fire("Stop", {})
    assert [message.split(": ", 1)[1] for message in outcome.system_messages] == [
        "oops",
        "timed out after 0.2 s and was stopped",
    ]


def test_an_unknown_event_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown hook event 'PreToolCall'; known: SessionStart"):
        HookDispatcher({"PreToolCall": []})


async def test_in_process_callbacks_see_every_agent_through_app_open(tmp_path: Path) -> None:
    project = Project(tmp_path)
    seen: list[dict[str, Any]] = []

    async def record(
        payload: dict[str, Any], tool_use_id: str | None, context: HookContext
    ) -> dict[str, Any]:
        seen.append(payload)
        if payload["hook_event_name"] == "PreToolUse" and payload["tool_input"].get("command") == "echo a":
            specific = {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "updatedInput": {"command": "echo b"},
            }
            return {"hookSpecificOutput": specific}
        return {}

    task = {"description": "run", "prompt": "run echo", "subagent_type": "general"}
    outcome, requests = await project.run(
        [
            ServerReply(tool_calls=(ServerToolCall("task", task),)),
            ServerReply(tool_calls=(ServerToolCall("bash", {"command": "echo a"}),)),
            ServerReply(text="printed"),
            ServerReply(text="done"),
        ],
        callbacks={
            "PreToolUse": [HookMatcher("Bash|Task", [record])],
            "SubagentStop": [HookMatcher(None, [record])],
        },
    )
    assert outcome.text == "done"
    assert [(p["hook_event_name"], p["depth"]) for p in seen] == [
        ("PreToolUse", 0),
        ("PreToolUse", 1),
        ("SubagentStop", 1),
    ]
    assert "b" in tool_results(requests[2])[0]  # rewritten, and allowed without a question


async def test_permission_request_hooks_answer_and_notification_hooks_hear_the_question(
    tmp_path: Path,
) -> None:
    project = Project(tmp_path)
    recorder = project.recorder()
    allow = script(
        tmp_path / "bin",
        "allow.sh",
        "#!/bin/sh\ncat >/dev/null\n"
        'echo \'{"hookSpecificOutput": {"hookEventName": "PermissionRequest",\'\\\n'
        '\' "decision": {"behavior": "allow"}}}\'\n',
    )
    project.user_config = hooks_toml(
        {"PermissionRequest": [("Write", str(allow))], "Notification": [("permission_prompt", recorder)]}
    )
    with_server = [
        ServerReply(
            tool_calls=(
                ServerToolCall("write", {"path": "w.txt", "content": "x"}),
                ServerToolCall("bash", {"command": "touch b.txt"}),
            )
        ),
        ServerReply(text="done"),
    ]
    from nestor.api import ScriptedOpenAIServer

    with ScriptedOpenAIServer(with_server) as server:
        app = App.open(project.settings(server.base_url))
        events: list[Event] = []
        app.subscribe(events.append)
        try:
            conversation = await app.conversation(interactive=True, env={})
            running = asyncio.create_task(conversation.run_to_completion("go"))
            while not any(isinstance(event, PermissionRequested) for event in events):  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            question = next(event for event in events if isinstance(event, PermissionRequested))
            assert question.request.tool_name == "bash"  # the write was answered by the hook, not asked
            assert conversation.answer(question.request_id, "deny")
            outcome = await running
        finally:
            await app.aclose()
    assert (
        outcome.text == "done"
        and (project.folder / "w.txt").exists()
        and not (project.folder / "b.txt").exists()
    )
    notified = project.events()
    assert [event["notification_type"] for event in notified] == ["permission_prompt"]
    assert "touch b.txt" in notified[0]["message"]


async def test_hooks_answer_in_the_order_configured_and_the_older_approve_is_an_allow(tmp_path: Path) -> None:
    def rewrite(command: str) -> str:
        answer = json.dumps({"hookSpecificOutput": {"updatedInput": {"command": command}}})
        return f"cat >/dev/null; echo '{answer}'"

    hooks = [_hook("PreToolUse", rewrite("first")), _hook("PreToolUse", rewrite("second"))]
    hooks.append(_hook("PreToolUse", """cat >/dev/null; echo '{"decision": "approve", "reason": "fine"}'"""))
    outcome = await HookDispatcher.of(hooks, tmp_path).fire("PreToolUse", {})
    answers = [
        answer.get("hookSpecificOutput", {}).get("updatedInput") for _label, answer in outcome.decisions
    ]
    assert answers == [{"command": "first"}, {"command": "second"}, None]
    assert outcome.updated_input == {"command": "second"}
    assert (outcome.permission, outcome.permission_reasons) == ("allow", ["fine"])
