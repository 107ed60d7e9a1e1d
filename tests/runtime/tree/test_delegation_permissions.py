"""Sub-agent permissions end to end: the parent's policy bounds the child's, questions name the child."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo

from nestor.core.events import PermissionAsked, ToolFinished
from nestor.core.permission import PermissionRequest
from nestor.permissions import PermissionPolicy
from nestor.runtime.kernel.permission_gate import PermissionAnswer
from nestor.testing import ScriptedModel, Step, call, last_tool_results, reply
from tests.runtime.tree_support import RoutedScript, TreeHarness


class RecordingAsker:
    """A permission asker that records every question with the agent it came from."""

    def __init__(self, answer: PermissionAnswer = "once") -> None:
        self.answer: PermissionAnswer = answer
        self.asked: list[tuple[PermissionRequest, str]] = []

    async def __call__(self, request: PermissionRequest, agent_id: str) -> PermissionAnswer:
        self.asked.append((request, agent_id))
        return self.answer


def echo_result(messages: list[ModelMessage], info: AgentInfo) -> Step:
    return reply(f"child saw: {last_tool_results(messages)[0]}")


def delegating(child_steps: list[Any], **task_args: Any) -> ScriptedModel:
    """Main delegates ``CHILD: work`` once; the child plays ``child_steps``."""
    arguments = {"description": "work", "prompt": "CHILD: work", **task_args}
    return ScriptedModel(
        RoutedScript({"USER": [call("task", arguments), reply("main done")], "CHILD": child_steps})
    )


def child_tools(harness: TreeHarness, child_id: str) -> list[tuple[str, str]]:
    return [
        (event.tool_name, event.outcome)
        for event in harness.events
        if isinstance(event, ToolFinished) and event.agent_id == child_id
    ]


async def test_a_parent_deny_rule_denies_the_childs_command(tmp_path: Path) -> None:
    policy = PermissionPolicy.from_config([], [], ["bash"], project_root=str(tmp_path), yolo=True)
    model = delegating([call("bash", {"command": "touch made.txt"}), echo_result])
    asker = RecordingAsker()
    harness = TreeHarness(tmp_path, models={}, asker=asker)
    main = harness.main(model, policy=policy)

    await main.run("USER: go")

    [child] = harness.sessions.children(main.session_id)
    assert child_tools(harness, child.id) == [("bash", "denied")]
    assert not (tmp_path / "made.txt").exists()
    assert asker.asked == []
    report = str(model.requests[-1].messages[-1])  # the main agent's view of the task result
    assert "child saw: Permission denied by rule bash" in report


async def test_a_spec_ask_rule_under_a_yolo_parent_asks_the_user_for_the_child(tmp_path: Path) -> None:
    policy = PermissionPolicy(project_root=str(tmp_path), yolo=True)
    model = delegating([call("bash", {"command": "touch made.txt"}), echo_result], subagent_type="careful")
    asker = RecordingAsker("once")
    harness = TreeHarness(tmp_path, models={}, asker=asker)
    harness.write_agent("careful", "---\ndescription: Asks first.\npermission:\n  ask: [bash]\n---\nWork.\n")
    main = harness.main(model, ("view", "bash"), policy=policy, asker=asker)

    await main.run("USER: go")

    [child] = harness.sessions.children(main.session_id)
    [(request, agent_id)] = asker.asked
    assert agent_id == child.id != main.session_id
    assert request.tool_name == "bash" and request.target == "touch made.txt"
    asked = [e for e in harness.events if isinstance(e, PermissionAsked)]
    assert asked and {e.agent_id for e in asked} == {child.id}
    assert child_tools(harness, child.id) == [("bash", "success")]
    assert (tmp_path / "made.txt").exists()


async def test_a_child_denied_by_the_user_is_told_not_to_retry(tmp_path: Path) -> None:
    model = delegating([call("bash", {"command": "touch made.txt"}), echo_result])
    asker = RecordingAsker("deny")
    harness = TreeHarness(tmp_path, models={}, asker=asker)
    main = harness.main(model, asker=asker)

    await main.run("USER: go")

    [child] = harness.sessions.children(main.session_id)
    assert [agent_id for _, agent_id in asker.asked] == [child.id]
    assert child_tools(harness, child.id) == [("bash", "denied")]
    assert "child saw: The user denied: Run: touch made.txt" in str(model.requests[-1].messages[-1])
    assert not (tmp_path / "made.txt").exists()


async def test_explore_reading_outside_the_project_is_refused_without_asking(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("the launch codes\n", encoding="utf-8")
    small = ScriptedModel(RoutedScript({"CHILD": [call("view", {"path": str(secret)}), echo_result]}))
    main_model = ScriptedModel(
        [
            call("task", {"description": "peek", "prompt": "CHILD: peek", "subagent_type": "explore"}),
            reply("main done"),
        ]
    )
    asker = RecordingAsker("once")
    harness = TreeHarness(project, models={"small": small}, asker=asker)
    main = harness.main(main_model, asker=asker)

    await main.run("USER: go")

    assert asker.asked == []
    [child] = harness.sessions.children(main.session_id)
    assert child.agent_name == "explore"
    assert child_tools(harness, child.id) == [("view", "denied")]
    refusal = str(small.requests[-1].messages[-1])
    assert "agent explore is read-only and never asks" in refusal
    assert "launch codes" not in str(harness.messages.list(child.id))


async def test_a_headless_child_that_needs_a_question_is_denied_with_the_explanation(tmp_path: Path) -> None:
    model = delegating([call("bash", {"command": "touch made.txt"}), echo_result])
    harness = TreeHarness(tmp_path, models={}, asker=None)
    main = harness.main(model)

    await main.run("USER: go")

    [child] = harness.sessions.children(main.session_id)
    assert child_tools(harness, child.id) == [("bash", "denied")]
    refusal = str(model.requests[-2].messages[-1])  # the child's last request: its tool result
    assert "non-interactive run" in refusal and "--yolo" in refusal
    assert not (tmp_path / "made.txt").exists()
