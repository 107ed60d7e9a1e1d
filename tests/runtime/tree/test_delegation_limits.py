"""Sub-agent budgets end to end: every stop gives the parent a partial report from a tool-less last turn."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models.function import AgentInfo

from nestor.config.sections import AgentsConfig
from nestor.core.errors import ToolError
from nestor.core.events import AgentFinished
from nestor.runtime.kernel.hooks import Budgets, Hook, RunState, StopReason
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.tree.services import TaskRequest
from nestor.testing import RecordedRequest, ScriptedModel, Step, StepFunction, call, reply
from tests.runtime.tree_support import RoutedScript, TreeHarness, first_prompt, usage

REPORT_PROMPT = "You cannot call tools any more"


def task(description: str, prompt: str, **extra: Any) -> dict[str, Any]:
    return {"description": description, "prompt": prompt, **extra}


def the_task_result(agent: SessionAgent) -> ToolReturnPart:
    [part] = [
        part
        for message in agent.history
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == "task"
    ]
    return part


def requests_of(model: ScriptedModel, key: str) -> list[RecordedRequest]:
    return [request for request in model.requests if key in first_prompt(request.messages)]


def child_finished(harness: TreeHarness, parent_id: str) -> AgentFinished:
    [event] = [e for e in harness.events if isinstance(e, AgentFinished) and e.parent_id == parent_id]
    return event


def viewer(stop_text: str = "REPORT") -> StepFunction:
    """A child that views another file at every turn, and reports once it is offered no tools."""
    counter = itertools.count()

    def step(messages: list[ModelMessage], info: AgentInfo) -> Step:
        if not info.function_tools:
            return reply(f"{stop_text}: I read some files and ran out of turns")
        return call("view", {"path": f"f{next(counter)}.txt"})

    return step


def project_files(root: Path, count: int = 20) -> None:
    for index in range(count):
        (root / f"f{index}.txt").write_text(f"file {index}\n", encoding="utf-8")


def assert_partial_report(part: ToolReturnPart, stop_reason: str, report: str) -> dict[str, Any]:
    """The parent got the child's last words, marked as a stopped (not a failed-empty) task."""
    result: dict[str, Any] = part.metadata["subagent"]
    assert result["stop_reason"] == stop_reason
    assert result["success"] is False
    assert report in result["summary"]
    assert report in str(part.content) and f"· {stop_reason}]" in str(part.content)
    return result


def assert_tool_less_last_turn(requests: list[RecordedRequest]) -> None:
    *working, last = requests
    assert working and all(request.tool_names for request in working)
    assert last.tool_names == []
    assert REPORT_PROMPT in str(last.messages[-1])


# -- turns ------------------------------------------------------------------------------------


async def test_max_turns_of_the_task_call_ends_with_a_tool_less_report(tmp_path: Path) -> None:
    project_files(tmp_path)
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [call("task", task("look", "CHILD: look around", max_turns=2)), reply("main done")],
                "CHILD": [
                    call("view", {"path": "f0.txt"}),
                    call("view", {"path": "f1.txt"}),
                    reply("partial: f0 and f1 say hello"),
                ],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model)

    result = await main.run("USER: go")

    assert result.stop_reason == "completed" and result.text == "main done"
    child_requests = requests_of(model, "CHILD")
    assert len(child_requests) == 3
    assert_tool_less_last_turn(child_requests)
    assert "max_iterations = 2" in str(child_requests[-1].messages[-1])
    stored = assert_partial_report(the_task_result(main), "max_turns", "partial: f0 and f1 say hello")
    assert stored["tools_used"] == {"view": 2}
    assert stored["files_explored"] == ["f0.txt", "f1.txt"]
    [child] = harness.sessions.children(main.session_id)
    assert child.status == "max_iterations"
    assert child_finished(harness, main.session_id).stop_reason == "max_iterations"


@pytest.mark.parametrize(
    ("from_call", "from_spec", "from_config", "expected"),
    [
        pytest.param(None, None, 1, 1, id="config"),
        pytest.param(None, 2, 5, 2, id="spec-beats-config"),
        pytest.param(3, 2, 5, 3, id="call-beats-spec"),
        pytest.param(1, 4, 5, 1, id="call-below-spec"),
    ],
)
async def test_max_turns_precedence_is_call_then_spec_then_config(
    tmp_path: Path, from_call: int | None, from_spec: int | None, from_config: int, expected: int
) -> None:
    project_files(tmp_path)
    extra: dict[str, Any] = {} if from_call is None else {"max_turns": from_call}
    harness_config = AgentsConfig(max_turns=from_config)
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [call("task", task("work", "CHILD: work", **extra, subagent_type="x")), reply("ok")],
                "CHILD": [viewer() for _ in range(expected + 5)],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={}, config=harness_config)
    spec_turns = "" if from_spec is None else f"max_turns: {from_spec}\n"
    harness.write_agent("x", f"---\ndescription: A worker.\n{spec_turns}---\nWork.\n")
    main = harness.main(model)

    await main.run("USER: go")

    child_requests = requests_of(model, "CHILD")
    assert len(child_requests) == expected + 1
    assert_tool_less_last_turn(child_requests)
    stored = assert_partial_report(the_task_result(main), "max_turns", "REPORT")
    assert stored["tools_used"] == {"view": expected}
    assert stored["iterations"] == expected + 1  # the report turn is a model request too


# -- time -------------------------------------------------------------------------------------


async def test_a_task_timeout_interrupts_a_slow_request_and_still_gets_a_report(tmp_path: Path) -> None:
    project_files(tmp_path)
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [call("task", task("slow", "CHILD: be slow", timeout=0.3)), reply("main done")],
                "CHILD": [
                    call("view", {"path": "f0.txt"}),
                    reply("this answer never arrives", delay=30),
                    reply("partial: only f0 was read before the time ran out"),
                ],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model)

    result = await main.run("USER: go")

    assert result.stop_reason == "completed" and result.text == "main done"
    child_requests = requests_of(model, "CHILD")
    assert len(child_requests) == 3
    assert_tool_less_last_turn(child_requests)
    assert "Stopped after 0.3 s" in str(child_requests[-1].messages[-1])
    assert_partial_report(the_task_result(main), "timeout", "partial: only f0 was read")
    [child] = harness.sessions.children(main.session_id)
    assert child.status == "timeout"
    assert "never arrives" not in str(harness.messages.list(child.id))


# -- the loop guard ---------------------------------------------------------------------------


async def test_a_child_repeating_one_call_is_reminded_then_stopped_with_a_report(tmp_path: Path) -> None:
    project_files(tmp_path)
    same = call("view", {"path": "f0.txt"})
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [call("task", task("loop", "CHILD: loop")), reply("main done")],
                "CHILD": [*[same] * 7, reply("partial: f0 says file 0, I kept rereading it")],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model)

    await main.run("USER: go")

    child_requests = requests_of(model, "CHILD")
    assert len(child_requests) == 8
    assert_tool_less_last_turn(child_requests)
    reminder = "with the same arguments 6 times"
    assert reminder not in str(child_requests[5].messages)
    assert reminder in str(child_requests[6].messages)  # one reminder after the sixth identical call
    stored = assert_partial_report(the_task_result(main), "loop", "I kept rereading it")
    assert stored["tools_used"] == {"view": 7}
    assert child_finished(harness, main.session_id).stop_reason == "loop"


async def test_a_child_alternating_two_calls_is_reminded_then_stopped_with_a_report(tmp_path: Path) -> None:
    project_files(tmp_path)
    a, b = call("view", {"path": "f0.txt"}), call("view", {"path": "f1.txt"})
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [call("task", task("loop", "CHILD: loop")), reply("main done")],
                "CHILD": [*[a, b] * 3, a, reply("partial: f0 and f1 say file 0 and file 1")],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model)

    await main.run("USER: go")

    child_requests = requests_of(model, "CHILD")
    assert len(child_requests) == 8  # six calls, the reminded one (one more on the cycle), the report
    assert "in a cycle" in str(child_requests[6].messages)
    assert_tool_less_last_turn(child_requests)
    assert_partial_report(the_task_result(main), "loop", "file 0 and file 1")


# -- context and cost -------------------------------------------------------------------------


async def test_a_child_over_its_context_budget_stops_and_reports(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"{i:05d} {'x' * 94}\n" for i in range(200)), encoding="utf-8")
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [
                    call("task", task("read", "CHILD: read big.txt", subagent_type="reader")),
                    reply("ok"),
                ],
                "CHILD": [
                    call("view", {"path": "big.txt"}, usage=usage(input_tokens=300)),
                    reply("partial: big.txt is 200 numbered lines of x"),
                ],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    harness.write_agent(
        "reader", "---\ndescription: Reads files.\ntools: [view]\nmax_context_tokens: 1000\n---\nRead.\n"
    )
    main = harness.main(model)

    await main.run("USER: go")

    child_requests = requests_of(model, "CHILD")
    assert len(child_requests) == 2
    assert_tool_less_last_turn(child_requests)
    assert "max_context_tokens = 1000" in str(child_requests[-1].messages[-1])
    stored = assert_partial_report(the_task_result(main), "token_budget", "200 numbered lines")
    assert stored["tools_used"] == {"view": 1}
    [child] = harness.sessions.children(main.session_id)
    assert child.status == "token_budget"


async def test_the_tree_cost_cap_stops_the_child_then_the_main_agent(tmp_path: Path) -> None:
    project_files(tmp_path)
    routes: dict[str, list[Any]] = {
        "USER": [
            call("task", task("spend", "CHILD: spend"), usage=usage(cost=0.001)),
            reply("the main agent never gets this far", usage=usage(cost=0.001)),
        ],
        "CHILD": [
            call("view", {"path": "f0.txt"}, usage=usage(cost=0.01)),
            reply("partial: f0 read before the money ran out", usage=usage(cost=0.0005)),
            reply("never", usage=usage(cost=0.001)),
        ],
    }
    script = RoutedScript(routes)
    harness = TreeHarness(tmp_path, models={}, config=AgentsConfig(max_cost_usd=0.01))
    main = harness.main(ScriptedModel(script))

    result = await main.run("USER: go")

    assert script.played_by == {"USER": 1, "CHILD": 2}
    assert result.stop_reason == "token_budget"
    assert "max_cost_usd = 0.01" in result.text
    assert_partial_report(the_task_result(main), "token_budget", "before the money ran out")
    assert child_finished(harness, main.session_id).stop_reason == "token_budget"
    root = harness.sessions.get(main.session_id)
    assert root.usage.cost_usd == pytest.approx(0.001 + 0.01 + 0.0005)
    assert root.status == "token_budget"


# -- the main agent's budgets bound the whole tree ----------------------------------------------


class AskMainReport(Hook):
    """The main agent's final-report hook, as the app gives it."""

    async def final_turn(self, state: RunState, reason: StopReason, message: str) -> str | None:
        return f"You have been stopped: {message}. Write your final report now."


def main_reporter(text: str) -> StepFunction:
    """The main agent: delegates once, then reports when it is offered no tools."""

    def step(messages: list[ModelMessage], info: AgentInfo) -> Step:
        if not info.function_tools:
            return reply(text, usage=usage())
        return call("task", task("work", "CHILD: work"), usage=usage())

    return step


def spending_viewer() -> StepFunction:
    counter = itertools.count()

    def step(messages: list[ModelMessage], info: AgentInfo) -> Step:
        if not info.function_tools:
            return reply("REPORT: I read some files before the tree's budget ran out", usage=usage())
        return call("view", {"path": f"f{next(counter) % 20}.txt"}, usage=usage())

    return step


async def test_the_main_agents_iteration_budget_bounds_its_sub_agents(tmp_path: Path) -> None:
    project_files(tmp_path)
    model = ScriptedModel(
        RoutedScript({"USER": [main_reporter("main report")] * 3, "CHILD": [spending_viewer()] * 70})
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model, budgets=Budgets(max_iterations=4), hooks=[AskMainReport()])

    result = await main.run("USER: go")

    # One main request and three of the child's spend the four; each then gets its report turn.
    assert len(requests_of(model, "CHILD")) == 4
    assert len(model.requests) == 6
    assert_partial_report(the_task_result(main), "max_turns", "REPORT")
    assert result.stop_reason == "max_iterations"
    assert result.text.startswith("main report")
    assert "main agent and its sub-agents together" in result.text
    assert model.requests[-1].tool_names == []


async def test_the_main_agents_token_budget_bounds_its_sub_agents(tmp_path: Path) -> None:
    project_files(tmp_path)
    model = ScriptedModel(
        RoutedScript({"USER": [main_reporter("main report")] * 3, "CHILD": [spending_viewer()] * 70})
    )
    harness = TreeHarness(tmp_path, models={})
    # Every request spends 110 tokens: the fifth passes 500.
    main = harness.main(model, budgets=Budgets(max_total_tokens=500), hooks=[AskMainReport()])

    result = await main.run("USER: go")

    assert len(requests_of(model, "CHILD")) == 5
    assert len(model.requests) == 7
    assert_partial_report(the_task_result(main), "token_budget", "REPORT")
    assert result.stop_reason == "token_budget" and result.text.startswith("main report")


async def test_the_main_agents_time_budget_bounds_its_sub_agents(tmp_path: Path) -> None:
    project_files(tmp_path)
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [main_reporter("main report")] * 2,
                "CHILD": [call("view", {"path": "f0.txt"}), reply("never", delay=30)],
            }
        )
    )
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model, budgets=Budgets(max_time_s=0.5), hooks=[AskMainReport()])

    result = await main.run("USER: go")

    assert result.stop_reason == "timeout" and result.text.startswith("main report")
    [child] = harness.sessions.children(main.session_id)
    assert child.status != "running"


async def test_a_background_child_counts_in_the_tree_budget(tmp_path: Path) -> None:
    project_files(tmp_path)

    def main_step(messages: list[ModelMessage], info: AgentInfo) -> Step:
        if not info.function_tools:
            return reply("main report", usage=usage())
        if "task_output" not in str(messages):
            return call("task", task("work", "CHILD: work", run_in_background=True), usage=usage())
        return call("task_output", {"agent_id": "x", "block": True}, usage=usage())

    model = ScriptedModel(RoutedScript({"USER": [main_step] * 5, "CHILD": [spending_viewer()] * 70}))
    harness = TreeHarness(tmp_path, models={})
    main = harness.main(model, budgets=Budgets(max_iterations=5), hooks=[AskMainReport()])

    await main.run("USER: go")
    await harness.tree.background.wait_all()

    assert len(requests_of(model, "CHILD")) < 8


@pytest.mark.parametrize(
    ("agent_type", "config"),
    [("coder", AgentsConfig()), ("no-such-agent", AgentsConfig()), ("general", AgentsConfig(max_depth=0))],
)
async def test_a_task_that_skipped_the_guard_is_refused_in_the_guards_own_words(
    tmp_path: Path, agent_type: str, config: AgentsConfig
) -> None:
    harness = TreeHarness(tmp_path, models={}, config=config)
    main = harness.main(ScriptedModel([reply("unused")]))
    said = harness.tree.check_task({"prompt": "look", "subagent_type": agent_type}, 0)

    with pytest.raises(ToolError) as refused:
        await harness.tree.run_task(main, TaskRequest("look", "look", agent_type=agent_type), "call-1")

    assert said is not None and str(refused.value) == said
