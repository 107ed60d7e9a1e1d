"""The built-in loop guard: a reminder, then a stop, for an agent repeating the same tool call."""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ModelRequest, SystemPromptPart

from nestor.runtime.kernel.hooks import Budgets, Stop, TreeBudget, over_budget
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


async def test_two_calls_alternating_are_reminded_then_stopped(harness: Harness) -> None:
    a, b = call("echo", {"text": "a"}), call("echo", {"text": "b"})
    model = ScriptedModel([a, b] * 30)
    agent = harness.agent(model, [EchoTool()])

    result = await agent.run("go")

    assert result.stop_reason == "loop" and not result.is_error
    assert "repeating the same 2 tool calls" in result.text
    # A, B seen three times over (six calls): the seventh request carries the reminder, and one
    # more call on the cycle stops the run.
    assert [bool(reminders(request.messages)) for request in model.requests] == [False] * 6 + [True]
    assert "echo, echo" in reminders(model.requests[6].messages)[0]


async def test_a_cycle_of_three_and_of_four_calls_is_caught(harness: Harness) -> None:
    for period in (3, 4):
        steps = [call("echo", {"text": str(n)}) for n in range(period)]
        model = ScriptedModel(steps * 10)
        result = await harness.agent(model, [EchoTool()]).run("go")
        assert result.stop_reason == "loop", period
        assert len(model.requests) == 3 * period + 1


async def test_an_agent_that_breaks_the_cycle_after_the_reminder_goes_on(harness: Harness) -> None:
    a, b = call("echo", {"text": "a"}), call("echo", {"text": "b"})
    model = ScriptedModel([a, b, a, b, a, b, call("echo", {"text": "c"}), reply("done")])
    result = await harness.agent(model, [EchoTool()]).run("go")
    assert result.stop_reason == "completed" and result.text == "done"


async def test_parallel_calls_in_any_order_count_as_one_step_of_a_cycle(harness: Harness) -> None:
    a, b, c = (call("echo", {"text": t}) for t in "abc")
    model = ScriptedModel([a + b, c, b + a, c, a + b, c, reply("never")])
    result = await harness.agent(model, [EchoTool()]).run("go")
    assert result.stop_reason == "completed"  # the reminder came, and the model answered
    assert reminders(model.requests[6].messages)


def test_a_run_and_its_tree_are_held_to_their_budgets_by_the_same_checks() -> None:
    budgets = Budgets(max_iterations=3, max_total_tokens=100)
    tree = TreeBudget(budgets)
    tree.requests, tree.total_tokens = 2, 100

    assert over_budget(budgets, 2, 99) is None
    run_stop = over_budget(budgets, 3, 0)
    tree_stop = tree.spent()

    assert run_stop == Stop("max_iterations", "Stopped after 3 model requests (max_iterations = 3).")
    together = "of the main agent and its sub-agents together"
    assert tree_stop == Stop("token_budget", f"Stopped after 100 tokens {together} (max_tokens = 100).")
