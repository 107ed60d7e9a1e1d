"""The loop's hook points before a tool call, before finishing and after a stop, through a real agent."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

from pydantic import BaseModel
from pydantic_ai.exceptions import ModelAuthenticationError
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo

from nestor.core.events import AgentFinished, ErrorEvent, ToolFinished
from nestor.core.permission import PermissionRequest
from nestor.runtime.kernel.hooks import Budgets, Hook, Remind, RunState, StopReason
from nestor.runtime.kernel.loop import REPORT_GRACE_MIN_S, SessionAgent
from nestor.runtime.kernel.permission_gate import PermissionAnswer
from nestor.runtime.kernel.setup import RunResult
from nestor.testing import ScriptedModel, Step, StepFunction, call, fail, reply
from nestor.tools.base import Tool, ToolContext
from tests.runtime.support import EchoTool, GuardedTool, Harness, tool_results

MAX_ITERATIONS_MESSAGE = "Stopped after 1 model requests (max_iterations = 1)."


class RefuseTool(Hook):
    """Refuses every call of one tool; records the calls it saw."""

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name
        self.seen: list[str] = []

    async def before_tool_call(self, state: RunState, call: ToolCallPart) -> str | None:
        self.seen.append(call.tool_name)
        if call.tool_name == self.tool_name:
            return f"{call.tool_name} is not allowed in this test."
        return None


class RemindTimes(Hook):
    """Sends the agent back to work ``times`` times; records the answers it saw."""

    def __init__(self, text: str, times: int = 1) -> None:
        self.text = text
        self.times = times
        self.answers: list[str] = []

    async def before_finish(self, state: RunState, text: str) -> Remind | None:
        self.answers.append(text)
        if len(self.answers) > self.times:
            return None
        return Remind(self.text)


class AskReport(Hook):
    """Asks for a final report after a stop (or not, with ``prompt=None``); records what it was told."""

    def __init__(self, prompt: str | None = "Write your report now, without tools.") -> None:
        self.prompt = prompt
        self.calls: list[tuple[StopReason, str]] = []
        self.ended: list[RunResult] = []

    async def final_turn(self, state: RunState, reason: StopReason, message: str) -> str | None:
        self.calls.append((reason, message))
        return self.prompt

    async def on_run_end(self, state: RunState, result: RunResult) -> None:
        self.ended.append(result)


class SleepParams(BaseModel):
    seconds: float


class SleepTool(Tool[SleepParams]):
    name = "sleep"
    params_model = SleepParams
    read_only = True

    @property
    def description(self) -> str:
        return "Sleep."

    async def run(self, params: SleepParams, ctx: ToolContext) -> str:
        await asyncio.sleep(params.seconds)
        return "slept"


def hanging(requested: asyncio.Event) -> StepFunction:
    """A step that sets ``requested`` when its request arrives, then answers only after 30 s."""

    def step(messages: list[ModelMessage], info: AgentInfo) -> Step:
        requested.set()
        return reply("never", delay=30)

    return step


def user_prompts(messages: list[ModelMessage]) -> list[str]:
    return [
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    ]


# -- before_tool_call ---------------------------------------------------------------------------


async def test_a_refused_call_is_not_run_and_the_model_sees_the_refusal(harness: Harness) -> None:
    guarded = GuardedTool()
    asked: list[PermissionRequest] = []

    async def asker(request: PermissionRequest, agent_id: str) -> PermissionAnswer:
        asked.append(request)
        return "once"

    hook = RefuseTool("guarded")
    model = ScriptedModel([call("guarded", {"target": "deploy"}) + call("echo", {"text": "hi"}), reply("ok")])
    agent = harness.agent(model, [guarded, EchoTool()], asker=asker, hooks=[hook])

    result = await agent.run("go")

    assert result.stop_reason == "completed" and result.text == "ok"
    assert guarded.ran == 0 and asked == []
    assert hook.seen == ["guarded", "echo"]
    refused, echoed = tool_results(model.requests[1].messages[-1])
    assert (refused.tool_name, refused.outcome, refused.content) == (
        "guarded",
        "denied",
        "guarded is not allowed in this test.",
    )
    assert (echoed.outcome, echoed.content) == ("success", "echo: hi")
    finished = {event.tool_name: event.outcome for event in harness.events if isinstance(event, ToolFinished)}
    assert finished == {"guarded": "denied", "echo": "success"}
    stored = harness.messages.list(agent.session_id)
    assert [part.outcome for part in tool_results(stored[2])] == ["denied", "success"]


async def test_a_refusal_comes_before_checking_the_tool_exists(harness: Harness) -> None:
    model = ScriptedModel([call("nonexistent"), reply("ok")])
    agent = harness.agent(model, [EchoTool()], hooks=[RefuseTool("nonexistent")])

    await agent.run("go")

    (refused,) = tool_results(model.requests[1].messages[-1])
    assert refused.outcome == "denied" and refused.content == "nonexistent is not allowed in this test."


# -- before_finish ------------------------------------------------------------------------------


async def test_a_reminder_before_finishing_sends_the_agent_back_to_work(harness: Harness) -> None:
    hook = RemindTimes("Run the tests before you answer.")
    model = ScriptedModel([reply("Done."), call("echo", {"text": "tests"}), reply("Done, tests pass.")])
    agent = harness.agent(model, [EchoTool()], hooks=[hook])

    result = await agent.run("fix it")

    assert result.stop_reason == "completed" and result.text == "Done, tests pass."
    assert len(model.requests) == 3 and result.num_turns == 3
    assert hook.answers == ["Done.", "Done, tests pass."]
    wrapped = "<system-reminder>Run the tests before you answer.</system-reminder>"
    last = model.requests[1].messages[-1]
    assert isinstance(last, ModelRequest) and [type(p) for p in last.parts] == [UserPromptPart]
    assert user_prompts([last]) == [wrapped]
    assert user_prompts(harness.messages.list(agent.session_id)) == ["fix it", wrapped]


async def test_reminders_of_several_hooks_go_in_one_message(harness: Harness) -> None:
    model = ScriptedModel([reply("Done."), reply("Really done.")])
    hooks = [RemindTimes("First."), RemindTimes("Second.")]
    agent = harness.agent(model, hooks=hooks)

    await agent.run("go")

    assert user_prompts([model.requests[1].messages[-1]]) == [
        "<system-reminder>First.\n\nSecond.</system-reminder>"
    ]


async def test_a_hook_that_always_reminds_is_stopped_by_the_iteration_budget(harness: Harness) -> None:
    model = ScriptedModel([reply("Done."), reply("Done!"), reply("DONE!")])
    agent = harness.agent(
        model, hooks=[RemindTimes("Not yet.", times=100)], budgets=Budgets(max_iterations=3)
    )

    result = await agent.run("go")

    assert result.stop_reason == "max_iterations" and len(model.requests) == 3
    assert result.text.startswith("DONE!\n\n[Stopped after 3 model requests")


# -- final_turn ---------------------------------------------------------------------------------


async def test_a_budget_stop_gets_one_last_request_without_tools(harness: Harness) -> None:
    hook = AskReport()
    model = ScriptedModel([call("echo", {"text": "look"}), reply("I found the bug in parser.py.")])
    agent = harness.agent(model, [EchoTool()], hooks=[hook], budgets=Budgets(max_iterations=1))

    result = await agent.run("find the bug")

    assert result.stop_reason == "max_iterations" and not result.is_error
    assert result.text == f"I found the bug in parser.py.\n\n[{MAX_ITERATIONS_MESSAGE}]"
    assert hook.calls == [("max_iterations", MAX_ITERATIONS_MESSAGE)]
    assert [request.tool_names for request in model.requests] == [["echo"], []]
    final = model.requests[1]
    assert final.info.instructions == "You are a test agent."
    assert user_prompts([final.messages[-1]]) == ["Write your report now, without tools."]
    assert [part.content for part in tool_results(final.messages[-2])] == ["echo: look"]
    assert result.num_turns == 2 and result.usage.requests == 2
    assert hook.ended[0].text == result.text
    stored = harness.messages.list(agent.session_id)
    assert user_prompts(stored) == ["find the bug", "Write your report now, without tools."]
    assert len(stored) == 5
    assert harness.sessions.get(agent.session_id).status == "max_iterations"
    finished = [event for event in harness.events if isinstance(event, AgentFinished)]
    assert finished[-1].result == result.text and finished[-1].stop_reason == "max_iterations"


async def test_the_prompts_of_several_hooks_are_joined(harness: Harness) -> None:
    model = ScriptedModel([call("echo", {"text": "look"}), reply("Report.")])
    hooks = [AskReport("First prompt."), AskReport(None), AskReport("Second prompt.")]
    agent = harness.agent(model, [EchoTool()], hooks=hooks, budgets=Budgets(max_iterations=1))

    await agent.run("go")

    assert user_prompts([model.requests[1].messages[-1]]) == ["First prompt.\n\nSecond prompt."]


async def test_a_timeout_during_a_model_request_gets_a_final_report(harness: Harness) -> None:
    hook = AskReport()
    model = ScriptedModel([reply("never sent", delay=30), reply("Partial report.")])
    agent = harness.agent(model, [EchoTool()], hooks=[hook], budgets=Budgets(max_time_s=0.2))

    result = await agent.run("go")

    assert result.stop_reason == "timeout" and not result.is_error
    assert result.text == "Partial report.\n\n[Stopped after 0.2 s (max_time_s).]"
    assert hook.calls == [("timeout", "Stopped after 0.2 s (max_time_s).")]
    assert [request.tool_names for request in model.requests] == [["echo"], []]
    assert user_prompts(model.requests[1].messages) == ["go", "Write your report now, without tools."]


async def test_the_report_of_a_timed_out_run_gets_a_bounded_grace_and_then_the_stop_stands(
    harness: Harness,
) -> None:
    # Found on the eval: the embedded model, loaded, spent over a minute on the report of a run
    # stopped at its 600 s limit, and the run was killed (`--max-time` is what the user waits).
    model = ScriptedModel([reply("never sent", delay=30), reply("A report too slow.", delay=30)])
    agent = harness.agent(model, [EchoTool()], hooks=[AskReport()], budgets=Budgets(max_time_s=0.2))

    started = time.monotonic()
    result = await agent.run("go")

    assert result.stop_reason == "timeout" and not result.is_error
    assert result.text == "[Stopped after 0.2 s (max_time_s).]"
    assert time.monotonic() - started < 0.2 + REPORT_GRACE_MIN_S + 5
    assert len(model.requests) == 2  # the report was asked for


async def test_a_timeout_during_a_tool_call_gets_a_final_report_after_the_interrupted_result(
    harness: Harness,
) -> None:
    model = ScriptedModel([call("sleep", {"seconds": 30}), reply("Partial report.")])
    agent = harness.agent(model, [SleepTool()], hooks=[AskReport()], budgets=Budgets(max_time_s=0.2))

    result = await agent.run("go")

    assert result.stop_reason == "timeout"
    assert result.text.startswith("Partial report.\n\n[Stopped after")
    final_messages = model.requests[1].messages
    assert [part.outcome for part in tool_results(final_messages[-2])] == ["interrupted"]
    assert model.requests[1].tool_names == []


async def test_a_loop_stop_gets_a_final_report(harness: Harness) -> None:
    hook = AskReport()
    model = ScriptedModel([*(call("echo", {"text": "same"}) for _ in range(7)), reply("Report.")])
    agent = harness.agent(model, [EchoTool()], hooks=[hook])

    result = await agent.run("go")

    assert result.stop_reason == "loop"
    assert result.text.startswith("Report.\n\n[Stopped: echo was called with the same arguments again")
    assert [reason for reason, _ in hook.calls] == ["loop"]
    assert model.requests[-1].tool_names == []


async def test_a_failed_final_request_keeps_the_stop_reason_and_reports_the_error(harness: Harness) -> None:
    model = ScriptedModel(
        [
            reply("Looking at parser.py.") + call("echo", {"text": "look"}),
            fail(ModelAuthenticationError("scripted", "invalid x-api-key")),
        ]
    )
    agent = harness.agent(model, [EchoTool()], hooks=[AskReport()], budgets=Budgets(max_iterations=1))

    result = await agent.run("go")

    assert result.stop_reason == "max_iterations" and not result.is_error and result.error is None
    assert result.text == f"Looking at parser.py.\n\n[{MAX_ITERATIONS_MESSAGE}]"
    assert len(model.requests) == 2 and result.num_turns == 1
    errors = [event for event in harness.events if isinstance(event, ErrorEvent)]
    assert len(errors) == 1
    assert errors[0].message.startswith("the final report request failed:")
    assert "invalid x-api-key" in errors[0].message
    assert harness.types()[-1] == "agent_finished"
    assert harness.sessions.get(agent.session_id).status == "max_iterations"


async def test_without_a_hook_asking_no_extra_request_is_made(harness: Harness) -> None:
    hook = AskReport(None)
    model = ScriptedModel([call("echo", {"text": "look"})])
    agent = harness.agent(model, [EchoTool()], hooks=[hook], budgets=Budgets(max_iterations=1))

    result = await agent.run("go")

    assert result.stop_reason == "max_iterations" and result.text == f"[{MAX_ITERATIONS_MESSAGE}]"
    assert len(model.requests) == 1 and hook.calls == [("max_iterations", MAX_ITERATIONS_MESSAGE)]
    assert user_prompts(harness.messages.list(agent.session_id)) == ["go"]


async def test_completed_failed_and_cancelled_runs_get_no_final_turn(harness: Harness) -> None:
    hook = AskReport()
    completed = harness.agent(ScriptedModel([reply("Done.")]), hooks=[hook])
    failing_model = ScriptedModel([fail(ModelAuthenticationError("scripted", "invalid x-api-key"))])
    failing = harness.agent(failing_model, hooks=[hook])
    requested = asyncio.Event()
    slow_model = ScriptedModel([hanging(requested)])
    cancelled = harness.agent(slow_model, hooks=[hook])

    assert (await completed.run("go")).stop_reason == "completed"
    assert (await failing.run("go")).stop_reason == "error"
    task = asyncio.create_task(cancelled.run("go"))
    await requested.wait()
    cancelled.cancel()
    assert (await task).stop_reason == "cancelled"

    assert hook.calls == []
    assert len(failing_model.requests) == 1 and len(slow_model.requests) == 1


async def test_a_cancel_during_the_final_turn_ends_the_run_as_cancelled(harness: Harness) -> None:
    requested = asyncio.Event()
    model = ScriptedModel([call("echo", {"text": "look"}), hanging(requested)])
    agent = harness.agent(model, [EchoTool()], hooks=[AskReport()], budgets=Budgets(max_iterations=1))

    task = asyncio.create_task(agent.run("go"))
    await requested.wait()
    agent.cancel()
    result = await task

    assert result.stop_reason == "cancelled" and result.text == "[Cancelled by the user.]"
    assert harness.sessions.get(agent.session_id).status == "cancelled"


async def test_a_tool_call_in_the_final_answer_is_not_run_and_the_next_run_goes_on(harness: Harness) -> None:
    model = ScriptedModel(
        [
            call("echo", {"text": "first"}),
            reply("Report so far.") + call("echo", {"text": "sneaky"}),
            reply("Next run."),
        ]
    )
    agent = harness.agent(model, [EchoTool()], hooks=[AskReport()], budgets=Budgets(max_iterations=1))

    first = await agent.run("go")
    second = await agent.run("and now")

    assert first.text == f"Report so far.\n\n[{MAX_ITERATIONS_MESSAGE}]"
    ran = [event.tool_call_id for event in harness.events if isinstance(event, ToolFinished)]
    assert ran == ["scripted-call-1"]
    assert second.stop_reason == "completed" and second.text == "Next run."
    repaired = tool_results(model.requests[2].messages[-2])
    assert [(part.tool_call_id, part.outcome) for part in repaired] == [("scripted-call-2", "interrupted")]


async def test_the_kernel_runs_the_hooks_it_is_given_and_adds_none_of_its_own(harness: Harness) -> None:
    # The budget hook and the loop guard are the agent recipe's (runtime/factory/recipe.py): an
    # agent set up without them is not stopped by its budgets, whatever they say.
    model = ScriptedModel([call("echo", {"text": "one"}), call("echo", {"text": "two"}), reply("done")])
    given = harness.agent(model, [EchoTool()], budgets=Budgets(max_iterations=1))
    agent = SessionAgent(given.session_id, replace(given.setup, hooks=()))

    result = await agent.run("go")

    assert (result.stop_reason, result.text) == ("completed", "done")
    assert len(model.requests) == 3
