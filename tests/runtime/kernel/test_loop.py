"""The agent loop against scripted models, a real SQLite store and real asyncio tasks."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic_ai.exceptions import ModelAuthenticationError, ModelHTTPError
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, UserPromptPart

from nestor.core.events import AgentFinished, PermissionAsked, Retrying, ToolFinished
from nestor.core.permission import PermissionRequest
from nestor.permissions import PermissionPolicy
from nestor.runtime.kernel.hooks import Budgets, Hook, Remind, RunState
from nestor.runtime.kernel.permission_gate import PermissionAnswer
from nestor.testing import ScriptedModel, reply
from nestor.tools.grep import GrepTool
from nestor.tools.view import ViewTool
from tests.runtime.support import (
    BarrierTool,
    BoomTool,
    EchoTool,
    GuardedTool,
    Harness,
    scripted,
    tool_results,
)


async def test_text_answer_is_streamed_stored_and_reported(harness: Harness) -> None:
    agent = harness.agent(scripted(["Hello there, human."]))
    result = await agent.run("hi")
    assert result.stop_reason == "completed"
    assert result.text == "Hello there, human."
    assert result.num_turns == 1
    stored = harness.messages.list(agent.session_id)
    assert len(stored) == 2
    assert isinstance(stored[0], ModelRequest) and isinstance(stored[1], ModelResponse)
    deltas = "".join(e.text for e in harness.events if e.type == "text_delta")
    assert deltas == "Hello there, human."
    types = harness.types()
    assert types[0] == "agent_started" and types[-1] == "agent_finished"
    assert harness.sessions.get(agent.session_id).status == "idle"
    assert harness.sessions.get(agent.session_id).usage.requests == 1


async def test_system_prompt_goes_as_instructions_and_is_not_stored(harness: Harness) -> None:
    seen: list[str | None] = []

    def capture(messages: list[ModelMessage]) -> str:
        return "ok"

    model = scripted([capture])
    original = model.stream_function
    assert original is not None

    async def spy(messages: list[ModelMessage], info: Any):
        seen.append(info.instructions)
        async for chunk in original(messages, info):
            yield chunk

    model.stream_function = spy
    agent = harness.agent(model)
    await agent.run("hi")
    assert seen == ["You are a test agent."]
    assert all("You are a test agent" not in str(m) for m in harness.messages.list(agent.session_id))


async def test_tool_calls_of_one_response_run_in_parallel(harness: Harness) -> None:
    barrier = BarrierTool(parties=3)
    model = scripted([[("barrier", {}), ("barrier", {}), ("barrier", {})], "all done"])
    agent = harness.agent(model, [barrier])
    result = await agent.run("go")
    assert result.text == "all done"
    stored = harness.messages.list(agent.session_id)
    results = tool_results(stored[2])
    assert [r.outcome for r in results] == ["success"] * 3
    # Results keep the order of the calls, whatever order they finished in.
    calls = [p for p in stored[1].parts if isinstance(p, ToolCallPart)]
    assert [r.tool_call_id for r in results] == [c.tool_call_id for c in calls]


async def test_invalid_arguments_go_back_to_the_model_as_a_retry(harness: Harness) -> None:
    requests: list[list[ModelMessage]] = []
    model = scripted([[("echo", {"wrong": 1})], [("echo", {"text": "fixed"})], "done"], requests=requests)
    agent = harness.agent(model, [EchoTool()])
    result = await agent.run("go")
    assert result.stop_reason == "completed"
    first = tool_results(requests[1][-1])[0]
    assert first.outcome == "retried"
    assert "text" in str(first.content) and "Invalid arguments for echo" in str(first.content)
    second = tool_results(requests[2][-1])[0]
    assert second.outcome == "success" and second.content == "echo: fixed"


async def test_unknown_tool_and_failing_tools_become_error_results(harness: Harness) -> None:
    requests: list[list[ModelMessage]] = []
    model = scripted(
        [[("nope", {}), ("boom", {"text": "crash"}), ("boom", {"text": "tool-error"})], "recovered"],
        requests=requests,
    )
    agent = harness.agent(model, [BoomTool()])
    result = await agent.run("go")
    assert result.stop_reason == "completed" and result.text == "recovered"
    unknown, crash, refused = tool_results(requests[1][-1])
    assert unknown.outcome == "retried" and "Unknown tool 'nope'" in str(unknown.content)
    assert "boom" in str(unknown.content)
    assert crash.outcome == "failed" and "RuntimeError: kaboom" in str(crash.content)
    assert refused.outcome == "failed" and str(refused.content) == "the boom tool refuses politely"


async def test_iteration_budget_ends_the_run_with_a_reason(harness: Harness) -> None:
    model = scripted([[("echo", {"text": "1"})], [("echo", {"text": "2"})], [("echo", {"text": "3"})]])
    agent = harness.agent(model, [EchoTool()], budgets=Budgets(max_iterations=2))
    result = await agent.run("loop forever")
    assert result.stop_reason == "max_iterations"
    assert result.num_turns == 2
    assert "max_iterations = 2" in result.text
    assert not result.is_error
    assert harness.sessions.get(agent.session_id).status == "max_iterations"


async def test_token_budget_ends_the_run(harness: Harness) -> None:
    # FunctionModel estimates ~50 input tokens per request.
    model = scripted([[("echo", {"text": "1"})], [("echo", {"text": "2"})], "never reached"])
    agent = harness.agent(model, [EchoTool()], budgets=Budgets(max_total_tokens=10))
    result = await agent.run("go")
    assert result.stop_reason == "token_budget"
    assert result.num_turns == 1


async def test_time_budget_interrupts_a_slow_tool_and_keeps_a_valid_history(harness: Harness) -> None:
    barrier = BarrierTool(parties=1)
    model = scripted([[("barrier", {"seconds": 30})], "after resume"])
    agent = harness.agent(model, [barrier], budgets=Budgets(max_time_s=0.3))
    result = await agent.run("go")
    assert result.stop_reason == "timeout"
    stored = harness.messages.list(agent.session_id)
    assert tool_results(stored[-1])[0].outcome == "interrupted"
    # The history is still valid: the next run continues from it.
    agent.setup.budgets = Budgets()
    again = await agent.run("continue")
    assert again.text == "after resume"


async def test_cancel_stops_the_turn_records_interruption_and_keeps_history(harness: Harness) -> None:
    barrier = BarrierTool(parties=1)
    model = scripted([[("barrier", {"seconds": 30})], "next turn works"])
    agent = harness.agent(model, [barrier])
    task = asyncio.create_task(agent.run("go"))
    await asyncio.wait_for(barrier.started.wait(), timeout=5)
    agent.cancel()
    result = await asyncio.wait_for(task, timeout=1)
    assert result.stop_reason == "cancelled"
    finished = [e for e in harness.events if isinstance(e, ToolFinished)]
    assert finished == []  # the tool never finished
    stored = harness.messages.list(agent.session_id)
    assert tool_results(stored[-1])[0].outcome == "interrupted"
    assert (await agent.run("again")).text == "next turn works"


async def test_prompt_queued_while_busy_is_taken_at_the_next_turn(harness: Harness) -> None:
    barrier = BarrierTool(parties=1)
    requests: list[list[ModelMessage]] = []
    model = scripted([[("barrier", {"seconds": 0.05})], "saw both"], requests=requests)
    agent = harness.agent(model, [barrier])
    task = asyncio.create_task(agent.run("first"))
    await asyncio.wait_for(barrier.started.wait(), timeout=5)
    assert agent.busy
    agent.enqueue("also this")
    result = await task
    assert result.text == "saw both"
    last_request = requests[1][-1]
    assert isinstance(last_request, ModelRequest)
    prompts = [p.content for p in last_request.parts if isinstance(p, UserPromptPart)]
    assert prompts == ["also this"]
    assert "prompt_queued" in harness.types()


async def test_prompt_queued_after_final_answer_starts_another_turn(harness: Harness) -> None:
    model = scripted([lambda messages: "first answer", "second answer"])
    agent = harness.agent(model)

    class QueueOnce(Hook):
        def __init__(self) -> None:
            self.done = False

        async def before_request(self, state: RunState) -> None:
            if not self.done:
                self.done = True
                agent.enqueue("one more thing")

    agent._hooks.append(QueueOnce())
    result = await agent.run("go")
    assert result.text == "second answer"
    assert result.num_turns == 2


async def test_transient_errors_are_retried_honouring_retry_after(harness: Harness) -> None:
    rate_limited = ModelHTTPError(
        429, "scripted-model", {"error": {"message": "slow down"}}, headers={"Retry-After": "7"}
    )
    overloaded = ModelHTTPError(503, "scripted-model", "busy")
    model = scripted([rate_limited, overloaded, "made it"])
    agent = harness.agent(model)
    result = await agent.run("go")
    assert result.text == "made it"
    retries = [e for e in harness.events if isinstance(e, Retrying)]
    assert [r.attempt for r in retries] == [1, 2]
    assert harness.sleeps[0] == 7.0
    assert 0 < harness.sleeps[1] <= 3.0  # exponential backoff from 1 s, with jitter
    assert "HTTP 429" in retries[0].reason and "slow down" in retries[0].reason


async def test_non_retryable_error_ends_the_run_with_a_clear_reason(harness: Harness) -> None:
    model = scripted([ModelAuthenticationError("scripted-model", "invalid x-api-key")])
    agent = harness.agent(model)
    result = await agent.run("go")
    assert result.is_error and result.stop_reason == "error"
    assert "invalid x-api-key" in result.text
    assert result.hint is not None and "API key" in result.hint
    assert harness.sleeps == []
    assert harness.sessions.get(agent.session_id).status == "error"


async def test_retries_give_up_after_max_attempts(harness: Harness) -> None:
    model = scripted([ModelHTTPError(500, "scripted-model", "oops")] * 5)
    agent = harness.agent(model)
    result = await agent.run("go")
    assert result.is_error
    assert "after 5 attempts" in result.text
    assert len(harness.sleeps) == 4


async def test_headless_denies_what_would_ask_and_tells_the_model_why(harness: Harness) -> None:
    guarded = GuardedTool()
    requests: list[list[ModelMessage]] = []
    model = scripted([[("guarded", {"target": "make deploy"})], "ok, I will not"], requests=requests)
    agent = harness.agent(model, [guarded])
    await agent.run("deploy")
    result = tool_results(requests[1][-1])[0]
    assert result.outcome == "denied"
    assert "--yolo" in str(result.content) and "non-interactive" in str(result.content)
    assert guarded.ran == 0
    denied = [e for e in harness.events if isinstance(e, PermissionAsked)]
    assert denied and denied[-1].decision == "deny"


async def test_asker_allow_for_session_grants_later_calls(harness: Harness) -> None:
    guarded = GuardedTool()
    asked: list[PermissionRequest] = []

    async def asker(request: PermissionRequest, agent_id: str) -> PermissionAnswer:
        asked.append(request)
        return "session"

    model = scripted(
        [[("guarded", {"target": "make test"})], [("guarded", {"target": "make test"})], "done"],
    )
    agent = harness.agent(model, [guarded], asker=asker)
    await agent.run("test twice")
    assert guarded.ran == 2
    assert len(asked) == 1


async def test_user_denial_and_deny_rules(harness: Harness) -> None:
    guarded = GuardedTool()

    async def asker(request: PermissionRequest, agent_id: str) -> PermissionAnswer:
        return "deny"

    policy = PermissionPolicy.from_config(
        [], [], ["guarded(rm *)"], project_root=str(harness.root), yolo=True
    )
    requests: list[list[ModelMessage]] = []
    model = scripted(
        [[("guarded", {"target": "rm -rf /"}), ("guarded", {"target": "ls"})], "fine"], requests=requests
    )
    agent = harness.agent(model, [guarded], asker=asker, policy=policy)
    await agent.run("go")
    by_rule, allowed_by_yolo = tool_results(requests[1][-1])
    assert by_rule.outcome == "denied" and "rule guarded(rm *)" in str(by_rule.content)
    assert allowed_by_yolo.outcome == "success"
    assert guarded.ran == 1


async def test_reminder_from_a_hook_reaches_the_model_but_not_the_store(harness: Harness) -> None:
    class Reminder(Hook):
        async def before_request(self, state: RunState) -> Remind:
            return Remind("remember the todo list")

    requests: list[list[ModelMessage]] = []
    agent = harness.agent(scripted(["ok"], requests=requests), hooks=[Reminder()])
    await agent.run("go")
    assert "remember the todo list" in str(requests[0][-1])
    assert "remember the todo list" not in str(harness.messages.list(agent.session_id))


async def test_unknown_price_reports_tokens_and_null_cost(harness: Harness) -> None:
    agent = harness.agent(scripted(["hi"]))
    result = await agent.run("go")
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    assert result.usage.cost_usd is None and result.usage.unpriced_requests == 1
    finished = [e for e in harness.events if isinstance(e, AgentFinished)][-1]
    assert finished.cost_usd is None


async def test_resuming_a_history_with_unanswered_calls_repairs_it(harness: Harness) -> None:
    session_id = harness.sessions.create(str(harness.root)).id
    harness.messages.append(session_id, ModelRequest(parts=[UserPromptPart("run it")]))
    harness.messages.append(
        session_id, ModelResponse(parts=[ToolCallPart("echo", {"text": "x"}, tool_call_id="lost_1")])
    )
    requests: list[list[ModelMessage]] = []
    agent = harness.agent(scripted(["resumed"], requests=requests), [EchoTool()], session_id=session_id)
    result = await agent.run("what happened?")
    assert result.text == "resumed"
    sent = requests[0]
    repaired = tool_results(sent[2])
    assert repaired[0].tool_call_id == "lost_1" and repaired[0].outcome == "interrupted"
    assert len(harness.messages.list(session_id)) == 5


async def test_prompt_queued_while_the_run_is_finishing_starts_another_run(harness: Harness) -> None:
    model = scripted(["first answer", "late answer"])
    agent = harness.agent(model)

    class QueueAtTheEnd(Hook):
        async def on_run_end(self, state: RunState, result: Any) -> None:
            if result.text == "first answer":
                agent.enqueue("one more, sent as the run ended")

    agent._hooks.append(QueueAtTheEnd())
    result = await agent.run("go")
    assert result.text == "late answer"
    stored = harness.messages.list(agent.session_id)
    assert [type(m).__name__ for m in stored] == ["ModelRequest", "ModelResponse"] * 2


async def test_prompts_left_queued_by_a_cancelled_run_go_first_in_the_next_run(harness: Harness) -> None:
    barrier = BarrierTool(parties=1)
    requests: list[list[ModelMessage]] = []
    model = scripted([[("barrier", {"seconds": 30})], "both seen"], requests=requests)
    agent = harness.agent(model, [barrier])
    task = asyncio.create_task(agent.run("go"))
    await asyncio.wait_for(barrier.started.wait(), timeout=5)
    agent.enqueue("queued before the cancel")
    agent.cancel()
    assert (await task).stop_reason == "cancelled"
    await agent.run("new prompt")
    last = requests[-1][-1]
    assert isinstance(last, ModelRequest)
    assert [p.content for p in last.parts if isinstance(p, UserPromptPart)] == [
        "queued before the cancel",
        "new prompt",
    ]


async def test_a_hooks_own_timeout_error_is_an_error_not_the_time_budget(harness: Harness) -> None:
    class Flaky(Hook):
        async def before_request(self, state: RunState) -> None:
            raise TimeoutError("the hook's own deadline")

    agent = harness.agent(scripted(["never"]), hooks=[Flaky()], budgets=Budgets(max_time_s=60))
    result = await agent.run("go")
    assert result.stop_reason == "error" and result.is_error
    assert "the hook's own deadline" in result.text


async def test_malformed_json_arguments_are_sent_back_as_such(harness: Harness) -> None:
    from nestor.testing import ScriptedModel, call, reply

    model = ScriptedModel([call("echo", '{"text": '), call("echo", "[1, 2]"), reply("ok")])
    agent = harness.agent(model, [EchoTool()])
    await agent.run("go")
    first, second = (tool_results(message)[0] for message in agent.history if tool_results_or_none(message))
    assert first.outcome == "retried" and "not valid JSON" in str(first.content)
    assert second.outcome == "retried" and "not valid JSON" in str(second.content)


def tool_results_or_none(message: ModelMessage) -> bool:
    return isinstance(message, ModelRequest) and bool(tool_results(message))


async def test_read_rules_hold_inside_the_project_through_the_loop(harness: Harness) -> None:
    (harness.root / ".env").write_text("TOKEN=hunter2\n")
    (harness.root / "app.py").write_text("TOKEN = 'from env'\n")
    policy = PermissionPolicy.from_config([], [], ["view(.env)"], project_root=str(harness.root))
    requests: list[list[ModelMessage]] = []
    model = scripted(
        [[("view", {"path": ".env"}), ("grep", {"pattern": "TOKEN"})], "fine"], requests=requests
    )
    agent = harness.agent(model, [ViewTool(), GrepTool(rg_path=None)], policy=policy)
    await agent.run("go")
    viewed, grepped = tool_results(requests[1][-1])
    assert viewed.outcome == "denied" and "rule view(.env)" in str(viewed.content)
    assert grepped.outcome == "success" and "app.py" in str(grepped.content)
    assert "hunter2" not in str(grepped.content)


async def test_an_empty_reply_is_asked_again_once(harness: Harness) -> None:
    model = ScriptedModel([reply(""), reply("There it is.")])
    agent = harness.agent(model)
    result = await agent.run("go")
    assert result.stop_reason == "completed" and result.text == "There it is."
    # The empty reply is not in the history: the same request goes again.
    assert len(model.requests) == 2 and model.requests[1].messages == model.requests[0].messages
    retries = [e.reason for e in harness.events if isinstance(e, Retrying)]
    assert retries == ["the model returned an empty reply"]
    assert result.num_turns == 2  # both requests count in the budgets


async def test_two_empty_replies_end_the_run_with_an_error(harness: Harness) -> None:
    agent = harness.agent(ScriptedModel([reply(""), reply(""), reply("never asked")]))
    result = await agent.run("go")
    assert result.is_error and result.stop_reason == "error"
    assert result.text == "the model test:scripted-model returned an empty reply twice"
    assert result.hint is not None and "--model" in result.hint
    assert harness.sessions.get(agent.session_id).status == "error"
    assert not any(isinstance(m, ModelResponse) for m in agent.history)
