"""Background sub-agents: an id at once, status and output tools, a notice into the parent's next request."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo

from nestor.core.events import BackgroundNotice
from nestor.testing import ScriptedModel, Step, call, reply
from nestor.testing.scripted_model import describe_request
from tests.runtime.tree_support import RoutedScript, TreeHarness


def task(description: str, prompt: str, **extra: Any) -> dict[str, Any]:
    return {"description": description, "prompt": prompt, **extra}


def started_id(messages: list[ModelMessage]) -> str:
    match = re.search(r"Started sub-agent (ses_\w+)", str(messages))
    assert match, describe_request(messages)
    return match.group(1)


async def test_a_background_task_returns_at_once_and_its_notice_reaches_the_next_request(
    tmp_path: Path,
) -> None:
    gate = asyncio.Event()

    async def slow(messages: list[ModelMessage], info: AgentInfo) -> Step:
        await gate.wait()
        return reply("the answer is 42, in src/deep.py:7")

    seen: list[str] = []

    def after_notice(messages: list[ModelMessage], info: AgentInfo) -> Step:
        seen.append(str(messages[-1]))
        return reply("the child says 42")

    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [
                    call("task", task("dig deep", "dig deep please", run_in_background=True)),
                    reply("started it, carrying on"),
                    after_notice,
                ],
                "dig deep please": [slow],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model)

    first = await main.run("USER: find the answer")

    assert first.text == "started it, carrying on"
    [child] = harness.sessions.children(main.session_id)
    assert harness.tree.background.running(child.id)
    assert not main.has_pending

    gate.set()
    await harness.tree.background.wait_all()
    [notice] = [e for e in harness.events if isinstance(e, BackgroundNotice)]
    assert notice.agent_id == main.session_id and notice.child_id == child.id
    assert notice.status == "completed" and notice.child_type == "general"
    header = f"[Background sub-agent {child.id} (general) completed]"
    assert notice.text.startswith(f"{header} Summary: the answer is 42")
    assert main.has_pending

    second = await main.run(None)

    assert second.text == "the child says 42"
    assert "[Background sub-agent" in seen[0] and "the answer is 42" in seen[0]
    assert not main.has_pending


async def test_task_output_waits_and_the_notice_joins_the_results_of_a_run_in_progress(
    tmp_path: Path,
) -> None:
    def wait_for_it(messages: list[ModelMessage], info: AgentInfo) -> Step:
        return call("task_output", {"agent_id": started_id(messages), "timeout": 30})

    final_request: list[str] = []

    def conclude(messages: list[ModelMessage], info: AgentInfo) -> Step:
        final_request.append(str(messages[-1]))
        return reply("done")

    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [
                    call("task", task("side job", "side job please", run_in_background=True)),
                    wait_for_it,
                    conclude,
                ],
                "side job please": [reply("side result", delay=0.05)],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model)

    result = await main.run("USER: go")

    assert result.text == "done"
    # The task_output result and the notice arrive in the same request.
    assert "side result" in final_request[0] and "[Background sub-agent" in final_request[0]
    assert not main.has_pending


async def test_task_status_and_task_cancel(tmp_path: Path) -> None:
    never = asyncio.Event()

    async def stuck(messages: list[ModelMessage], info: AgentInfo) -> Step:
        await never.wait()
        return reply("unreachable")

    def status(messages: list[ModelMessage], info: AgentInfo) -> Step:
        return call("task_status", {})

    statuses: list[str] = []

    def cancel(messages: list[ModelMessage], info: AgentInfo) -> Step:
        statuses.append(str(messages[-1]))
        return call("task_cancel", {"agent_id": started_id(messages)})

    results: list[str] = []

    def record(messages: list[ModelMessage], info: AgentInfo) -> Step:
        results.append(str(messages[-1]))
        return reply("gave up on it")

    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [
                    call("task", task("stuck job", "stuck job please", run_in_background=True)),
                    status,
                    cancel,
                    record,
                ],
                "stuck job please": [stuck],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model)

    result = await main.run("USER: go")

    assert result.text == "gave up on it"
    [child] = harness.sessions.children(main.session_id)
    assert f"{child.id} (general) running" in statuses[0]
    assert f"Cancelled {child.id}" in results[0]
    assert "(general) cancelled]" in results[0]  # the notice came with the cancel's result
    assert harness.sessions.get(child.id).status == "cancelled"
    assert not harness.tree.background.any_running()


async def test_a_spec_may_run_in_the_background_by_default(tmp_path: Path) -> None:
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [call("task", task("watch", "watch the logs", subagent_type="watcher")), reply("ok")],
                "watch the logs": [reply("all quiet")],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    harness.write_agent("watcher", "---\ndescription: Watches.\nbackground: true\n---\nWatch.\n")
    main = harness.main(model)
    await main.run("USER")
    assert any("Started sub-agent" in str(request.messages[-1]) for request in model.requests)
    await harness.tree.background.wait_all()
    assert main.has_pending
