"""Pooled sub-agents (``persist: true``): reuse with history, invalidation by a changed spec, bounds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models.function import AgentInfo

from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.tree.pool import AgentPool, PoolKey
from nestor.testing import ScriptedModel, Step, call, reply
from tests.runtime.tree_support import RoutedScript, TreeHarness

KEEPER = "---\ndescription: Remembers.\npersist: true\n---\nYou remember earlier tasks.{extra}\n"


def task(description: str, prompt: str, **extra: Any) -> dict[str, Any]:
    return {"description": description, "prompt": prompt, "subagent_type": "keeper", **extra}


def agent_ids(history: list[ModelMessage]) -> list[str]:
    return [
        part.metadata["subagent"]["agent_id"]
        for message in history
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == "task"
    ]


async def test_a_persistent_agent_is_reused_with_its_history_and_a_fresh_prompt(tmp_path: Path) -> None:
    seen: list[tuple[int, str]] = []

    def answer(text: str):
        def step(messages: list[ModelMessage], info: AgentInfo) -> Step:
            seen.append((len(messages), info.instructions or ""))
            return reply(text)

        return step

    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [
                    call("task", task("first", "first job")),
                    call("task", task("second", "second job", thoroughness="thorough")),
                    reply("ok"),
                ],
                "first job": [answer("first answer"), answer("second answer")],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    harness.write_agent("keeper", KEEPER.format(extra=""))
    main = harness.main(model)
    await main.run("USER")

    first, second = agent_ids(main.history)
    assert first == second
    assert len(harness.sessions.children(main.session_id)) == 1
    assert seen[0][0] == 1 and seen[1][0] == 3  # the second task sees the first one's prompt and answer
    assert "Thoroughness" not in seen[0][1] and "Thoroughness: thorough" in seen[1][1]
    assert len(harness.tree.pool) == 1


async def test_a_changed_spec_file_never_reuses_a_stale_agent(tmp_path: Path) -> None:
    harness = TreeHarness(tmp_path, models={})
    path = harness.write_agent("keeper", KEEPER.format(extra=""))

    def edit_spec_then_call(messages: list[ModelMessage], info: AgentInfo) -> Step:
        path.write_text(KEEPER.format(extra=" Now with a new rule."), encoding="utf-8")
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000))
        return call("task", task("second", "second job"))

    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [call("task", task("first", "first job")), edit_spec_then_call, reply("ok")],
                "first job": [reply("one")],
                "second job": [reply("two")],
            }
        )
    )
    main = harness.main(model)
    await main.run("USER")
    first, second = agent_ids(main.history)
    assert first != second
    assert len(harness.sessions.children(main.session_id)) == 2


def fake_agent(agent_id: str) -> SessionAgent:
    class Fake:
        session_id = agent_id

    return cast(SessionAgent, Fake())


def key(name: str) -> PoolKey:
    return PoolKey("parent", name, "p", "t", "m")


def test_the_pool_drops_the_least_recently_used_and_the_idle() -> None:
    now = [0.0]
    pool = AgentPool(size=2, idle_s=100, clock=lambda: now[0])
    a, b, c = fake_agent("a"), fake_agent("b"), fake_agent("c")
    assert pool.put(key("x"), a) == []
    now[0] = 1
    assert pool.put(key("y"), b) == []
    now[0] = 2
    assert pool.put(key("z"), c) == [a]  # over size: the oldest goes
    assert pool.take(key("x")) is None
    now[0] = 150
    assert {agent.session_id for agent in pool.expire()} == {"b", "c"}
    assert len(pool) == 0


def test_take_needs_the_whole_key_and_removes_the_agent() -> None:
    pool = AgentPool(size=4, idle_s=100)
    agent = fake_agent("a")
    pool.put(key("x"), agent)
    assert pool.take(PoolKey("other-parent", "x", "p", "t", "m")) is None
    assert pool.take(PoolKey("parent", "x", "p", "t", "other-model")) is None
    assert pool.take(key("x")) is agent
    assert pool.take(key("x")) is None
    pool.put(key("x"), agent)
    assert pool.take_by_id("a") is agent and len(pool) == 0
