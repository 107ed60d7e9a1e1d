"""The built-in loop guard: a reminder, then a stop, for an agent repeating the same tool call."""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ModelRequest, SystemPromptPart

from nestor.testing import ScriptedModel, call, reply
from tests.runtime.support import EchoTool, Harness


def reminders(messages: list[ModelMessage]) -> list[str]:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    return [part.content for part in last.parts if isinstance(part, SystemPromptPart)]


async def test_a_repeated_call_gets_a_reminder_then_the_run_stops(harness: Harness) -> None:
    model = ScriptedModel([call("echo", {"text": "same"}) for _ in range(8)])
    agent = harness.agent(model, [EchoTool()])

    result = await agent.run("go")

    assert result.stop_reason == "loop" and not result.is_error
    assert "echo was called with the same arguments again" in result.text
    # Six identical calls fill the window past five: the seventh request carries the reminder.
    assert [bool(reminders(request.messages)) for request in model.requests] == [False] * 6 + [True]
    assert "called echo with the same arguments 6 times" in reminders(model.requests[6].messages)[0]
    assert harness.sessions.get(agent.session_id).status == "loop"


async def test_an_agent_that_listens_to_the_reminder_goes_on(harness: Harness) -> None:
    steps = [call("echo", {"text": "same"}) for _ in range(6)]
    model = ScriptedModel([*steps, call("echo", {"text": "different"}), reply("done")])
    agent = harness.agent(model, [EchoTool()])

    result = await agent.run("go")

    assert result.stop_reason == "completed" and result.text == "done"


async def test_varied_calls_never_trip_the_guard(harness: Harness) -> None:
    model = ScriptedModel([*(call("echo", {"text": str(n)}) for n in range(12)), reply("done")])
    result = await harness.agent(model, [EchoTool()]).run("go")
    assert result.stop_reason == "completed"
    assert not any(reminders(request.messages) for request in model.requests)
