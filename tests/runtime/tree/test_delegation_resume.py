"""Resuming a sub-agent: its history from the store, also after a restart; refusals that say why."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo

from nestor.testing import ScriptedModel, Step, call, reply
from tests.runtime.tree_support import RoutedScript, TreeHarness


def task(description: str, prompt: str, **extra: Any) -> dict[str, Any]:
    return {"description": description, "prompt": prompt, **extra}


def conversation(messages: list[ModelMessage]) -> list[str]:
    """User prompts and answers of a conversation, in order."""
    said: list[str] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            said.extend(
                p.content
                for p in message.parts
                if isinstance(p, UserPromptPart) and isinstance(p.content, str)
            )
        elif isinstance(message, ModelResponse):
            said.extend(p.content for p in message.parts if isinstance(p, TextPart))
    return said


async def test_resume_after_a_restart_continues_the_childs_history(tmp_path: Path) -> None:
    first_model = ScriptedModel(
        RoutedScript(
            {
                "USER": [call("task", task("survey", "survey the parser")), reply("noted")],
                "survey the parser": [reply("the parser is in src/parse.py")],
            }
        )
    )
    before = TreeHarness(tmp_path, models={})
    main = before.main(first_model)
    await main.run("USER: survey")
    [child] = before.sessions.children(main.session_id)
    before.database.close()

    # A new process: a new store connection, registry and tree over the same database.
    child_requests: list[list[ModelMessage]] = []

    def resumed(messages: list[ModelMessage], info: AgentInfo) -> Step:
        child_requests.append(messages)
        return reply("its entry point is parse() at src/parse.py:12")

    second_model = ScriptedModel(
        RoutedScript(
            {
                "USER": [
                    call("task", task("go deeper", "now find its entry point", resume=child.id)),
                    reply("done"),
                ],
                # The resumed child's conversation still starts with its first task.
                "survey the parser": [resumed],
            }
        )
    )
    after = TreeHarness(tmp_path, models={})
    restarted = after.main(second_model, session_id=main.session_id)
    await restarted.run("USER: continue")

    assert conversation(child_requests[0]) == [
        "survey the parser",
        "the parser is in src/parse.py",
        "now find its entry point",
    ]
    assert [c.id for c in after.sessions.children(main.session_id)] == [child.id]
    stored = after.sessions.get(child.id)
    assert stored.title == "go deeper" and stored.usage.requests == 2
    *_, result = (
        part
        for message in restarted.history
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == "task"
    )
    assert result.metadata["subagent"]["agent_id"] == child.id
    assert "parse() at src/parse.py:12" in str(result.content)


async def test_resuming_a_running_agent_is_refused(tmp_path: Path) -> None:
    gate = asyncio.Event()

    async def slow(messages: list[ModelMessage], info: AgentInfo) -> Step:
        await gate.wait()
        return reply("finished")

    def resume_it(messages: list[ModelMessage], info: AgentInfo) -> Step:
        agent_id = re.search(r"Started sub-agent (ses_\w+)", str(messages))
        assert agent_id
        return call("task", task("again", "more", resume=agent_id.group(1)))

    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [
                    call("task", task("long job", "long job please", run_in_background=True)),
                    resume_it,
                    reply("ok"),
                ],
                "long job please": [slow],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model)
    await main.run("USER")
    refusal = str(model.requests[-1].messages[-1])
    assert "is still running" in refusal and "task_output" in refusal
    gate.set()
    await harness.tree.background.wait_all()


async def test_resuming_another_projects_agent_or_a_main_session_is_refused(tmp_path: Path) -> None:
    harness = TreeHarness(tmp_path, models={})
    elsewhere_parent = harness.sessions.create(str(tmp_path / "elsewhere"))
    elsewhere = harness.sessions.create(
        str(tmp_path / "elsewhere"), agent_name="explore", parent_id=elsewhere_parent.id
    )
    top = harness.sessions.create(str(tmp_path))
    model = ScriptedModel(
        [
            call("task", task("a", "b", resume=elsewhere.id)) + call("task", task("c", "d", resume=top.id)),
            reply("ok"),
        ]
    )
    main = harness.main(model)
    await main.run("go")
    results = str(model.requests[-1].messages[-1])
    assert "belongs to another project" in results
    assert "is a main session" in results
    assert len(harness.sessions.children(elsewhere_parent.id)) == 1
