"""The agent tree's hooks: delegation guard, sub-agent safety, search budget, report prompt, tree cost."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel
from pydantic_ai.messages import ToolCallPart, ToolReturnPart

from nestor.core.usage import Usage
from nestor.runtime.kernel.hooks import RunState, Stop
from nestor.runtime.kernel.setup import RunResult
from nestor.runtime.tree.subagent_hooks import (
    DelegationGuardHook,
    SearchBudgetHook,
    SubAgentSafetyHook,
    TimeoutReportHook,
)
from nestor.testing import ScriptedModel, call, last_tool_results, reply
from nestor.tools.base import Tool, ToolContext
from nestor.tools.catalogue import BuiltByOwner, ToolCatalogue
from tests.runtime.tree_support import RoutedScript, TreeHarness


def state(context_tokens: int = 0) -> RunState:
    return RunState(agent_id="ses_child", agent_type="general", context_tokens=context_tokens)


def tool_call(name: str, args: dict[str, Any] | str | None = None) -> ToolCallPart:
    return ToolCallPart(name, {} if args is None else args, tool_call_id=f"id-{name}")


def ended() -> RunResult:
    return RunResult(stop_reason="completed", text="done", usage=Usage(), num_turns=1, duration_s=0.0)


# -- search budget ----------------------------------------------------------------------------


async def test_search_budget_refuses_searches_past_the_limit_and_resets_per_task() -> None:
    hook = SearchBudgetHook(2)
    search = tool_call("web_search", {"query": "asyncio timeout"})
    assert await hook.before_tool_call(state(), search) is None
    assert await hook.before_tool_call(state(), search) is None
    refusal = await hook.before_tool_call(state(), search)
    assert refusal is not None and "Search budget spent (2 searches" in refusal
    assert "Do not search again" in refusal
    assert hook.used == 2  # a refused search is not counted
    assert await hook.before_tool_call(state(), tool_call("grep", {"pattern": "x"})) is None
    await hook.on_run_end(state(), ended())
    assert await hook.before_tool_call(state(), search) is None


async def test_a_search_that_never_ran_costs_no_budget() -> None:
    # A permission rule denied the search, or its arguments were invalid: nothing was searched.
    hook = SearchBudgetHook(1)
    for outcome in ("denied", "retried"):
        search = ToolCallPart("web_search", {"query": "q"}, tool_call_id=f"id-{outcome}")
        assert await hook.before_tool_call(state(), search) is None
        result = ToolReturnPart(
            "web_search", "Permission denied", tool_call_id=search.tool_call_id, outcome=outcome
        )
        assert await hook.after_tool_result(state(), search, result) is result
    assert hook.used == 0
    ran = tool_call("web_search", {"query": "q"})
    assert await hook.before_tool_call(state(), ran) is None
    await hook.after_tool_result(
        state(), ran, ToolReturnPart("web_search", "results", tool_call_id=ran.tool_call_id)
    )
    refused = await hook.before_tool_call(state(), ran)
    assert refused is not None and "Search budget spent (1 searches" in refused
    # Its own refusal is no refund either.
    await hook.after_tool_result(
        state(), ran, ToolReturnPart("web_search", refused, tool_call_id=ran.tool_call_id, outcome="denied")
    )
    assert hook.used == 1


async def test_a_zero_search_budget_refuses_the_first_search() -> None:
    hook = SearchBudgetHook(0)
    assert await hook.before_tool_call(state(), tool_call("web_search", {"query": "q"})) is not None
    assert await hook.before_tool_call(state(), tool_call("fetch", {"url": "http://x"})) is None


async def test_a_registered_web_search_tool_spends_the_same_budget() -> None:
    catalogue = ToolCatalogue()
    catalogue.register("brave_search", BuiltByOwner("an MCP server"), traits=["read_only", "searches_web"])
    hook = SearchBudgetHook(1, catalogue)
    assert await hook.before_tool_call(state(), tool_call("brave_search", {"q": "x"})) is None
    assert await hook.before_tool_call(state(), tool_call("web_search", {"query": "q"})) is not None


# -- delegation guard -------------------------------------------------------------------------


async def test_delegation_guard_checks_task_calls_only() -> None:
    seen: list[dict[str, object]] = []

    def check(args: dict[str, object]) -> str | None:
        seen.append(args)
        return "nesting too deep" if args.get("subagent_type") == "deep" else None

    hook = DelegationGuardHook(check)
    assert await hook.before_tool_call(state(), tool_call("bash", {"command": "ls"})) is None
    assert seen == []
    ok = tool_call("task", {"description": "d", "prompt": "p"})
    assert await hook.before_tool_call(state(), ok) is None
    refused = tool_call("task", {"description": "d", "prompt": "p", "subagent_type": "deep"})
    assert await hook.before_tool_call(state(), refused) == "nesting too deep"
    assert seen == [
        {"description": "d", "prompt": "p"},
        {"description": "d", "prompt": "p", "subagent_type": "deep"},
    ]


async def test_delegation_guard_leaves_invalid_json_to_the_loop() -> None:
    hook = DelegationGuardHook(lambda args: "never called")
    assert await hook.before_tool_call(state(), tool_call("task", '{"prompt": ')) is None


# -- sub-agent safety -------------------------------------------------------------------------


def user_facing_catalogue() -> ToolCatalogue:
    catalogue = ToolCatalogue()
    for name in ("ask_user", "send_file_to_user", "exit_plan_mode"):
        catalogue.register(name, BuiltByOwner("the test's UI"), traits=["user_facing"])
    return catalogue


async def test_safety_hook_refuses_every_user_facing_tool_of_its_catalogue() -> None:
    catalogue = ToolCatalogue()
    hook = SubAgentSafetyHook(64_000, catalogue)
    assert await hook.before_tool_call(state(), tool_call("ask_user")) is None  # not a tool yet
    for name in ("ask_user", "send_file_to_user", "exit_plan_mode"):  # registered while it runs
        catalogue.register(name, BuiltByOwner("the test's UI"), traits=["user_facing"])
        refusal = await hook.before_tool_call(state(), tool_call(name))
        assert refusal is not None and f"{name} is not available to sub-agents" in refusal
    assert await hook.before_tool_call(state(), tool_call("view", {"path": "a"})) is None
    assert await hook.before_tool_call(state(), tool_call("bash", {"command": "ls"})) is None


async def test_safety_hook_stops_a_context_over_its_budget() -> None:
    hook = SubAgentSafetyHook(1_000)
    assert await hook.before_request(state(context_tokens=1_000)) is None
    action = await hook.before_request(state(context_tokens=1_001))
    assert isinstance(action, Stop) and action.reason == "token_budget"
    assert "1001 tokens" in action.message and "max_context_tokens = 1000" in action.message
    assert await SubAgentSafetyHook(0).before_request(state(context_tokens=10**9)) is None


# -- report prompt and tree cost --------------------------------------------------------------


async def test_timeout_report_hook_asks_for_a_tool_less_report_naming_the_stop() -> None:
    hook = TimeoutReportHook()
    prompt = await hook.final_turn(state(), "timeout", "Stopped after 30 s (max_time_s).")
    assert prompt is not None and "Stopped after 30 s" in prompt
    assert "cannot call tools" in prompt and "final report" in prompt
    fallback = await hook.final_turn(state(), "loop", "")
    assert fallback is not None and "stopped: loop" in fallback


# -- end to end: what a sub-agent may never call ----------------------------------------------


ASKED: list[str] = []


class _Question(BaseModel):
    question: str


class AskUserTool(Tool[_Question]):
    """Stands in for the main agent's ``ask_user``; counts how often it really ran."""

    name: ClassVar[str] = "ask_user"
    params_model: ClassVar[type[BaseModel]] = _Question
    read_only: ClassVar[bool] = True

    @property
    def description(self) -> str:
        return "Ask the user a question."

    async def run(self, params: _Question, ctx: ToolContext) -> str:
        ASKED.append(ctx.session_id)
        return "the user says yes"


async def test_a_sub_agent_neither_gets_nor_may_call_a_user_facing_tool(tmp_path: Path) -> None:
    ASKED.clear()
    model = ScriptedModel(
        RoutedScript(
            {
                "USER": [call("task", {"description": "d", "prompt": "CHILD: decide"}), reply("k")],
                "CHILD": [
                    call("ask_user", {"question": "which one?"}),
                    lambda messages, info: reply(f"child saw: {last_tool_results(messages)[0]}"),
                ],
            }
        )
    )
    harness = TreeHarness(
        tmp_path, models={}, extra_tools={"ask_user": AskUserTool}, catalogue=user_facing_catalogue()
    )
    main = harness.main(model, ("view", "ask_user"))
    await main.run("USER: go")
    child_requests = [r for r in model.requests if "CHILD" in str(r.messages[0])]
    assert "ask_user" not in child_requests[0].tool_names
    assert "ask_user" in model.requests[0].tool_names  # the main agent has it
    assert "ask_user is not available to sub-agents" in str(child_requests[-1].messages[-1])
    assert ASKED == []
    [child] = harness.sessions.children(main.session_id)
    finished = [e for e in harness.events if e.type == "tool_finished" and e.agent_id == child.id]
    assert [(e.tool_name, e.outcome) for e in finished] == [("ask_user", "denied")]
