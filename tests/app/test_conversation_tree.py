"""The facade's view of the tree for a UI: stopping one sub-agent, background agents, context, sessions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from nestor.app import App
from nestor.core.events import AgentFinished, AgentStarted, Event
from nestor.testing import ScriptedOpenAIServer, ServerReply
from tests.app.test_conversation import settings_for
from tests.server_routes import Route, router, task_call


async def until(predicate: Callable[[], bool]) -> None:
    async with asyncio.timeout(10):  # only stops a hung test
        while not predicate():  # noqa: ASYNC110
            await asyncio.sleep(0.01)


@asynccontextmanager
async def opened(
    tmp_path: Path, routes: dict[str, list[ServerReply | Route]]
) -> AsyncIterator[tuple[App, list[Event]]]:
    """An app whose model answers each conversation from its route, and the events it publishes."""
    events: list[Event] = []
    with ScriptedOpenAIServer(router(routes)) as server:
        app = App.open(settings_for(tmp_path, server.base_url))
        app.subscribe(events.append)
        try:
            yield app, events
        finally:
            app.close()


def slow_and_quick() -> dict[str, list[ServerReply | Route]]:
    """The main agent starts two general agents at once: one slow (30 s), one quick (2 s); then it answers."""
    return {
        "USER": [
            ServerReply(
                tool_calls=(
                    task_call("slow one", "SLOW: take your time", subagent_type="general"),
                    task_call("quick one", "QUICK: answer", subagent_type="general"),
                )
            ),
            ServerReply(text="One was stopped, the other answered."),
        ],
        "SLOW": [ServerReply(text="never seen", delay=30)],
        "QUICK": [ServerReply(text="quick answer", delay=2.0)],
    }


def started(events: list[Event], description: str) -> AgentStarted | None:
    return next((e for e in events if isinstance(e, AgentStarted) and e.description == description), None)


async def test_cancelling_one_sub_agent_stops_it_alone_and_its_parent_carries_on(tmp_path: Path) -> None:
    routes = slow_and_quick()
    async with opened(tmp_path, routes) as (app, events):
        conversation = await app.conversation(interactive=True, env={})
        run = asyncio.ensure_future(conversation.run_to_completion("USER: two things"))
        await until(
            lambda: started(events, "slow one") is not None and started(events, "quick one") is not None
        )
        slow = started(events, "slow one")
        assert slow is not None
        assert not conversation.cancel_agent("ses_no_such_agent")
        assert conversation.cancel_agent(slow.agent_id)
        async with asyncio.timeout(20):
            outcome = await run
        assert not conversation.cancel_agent(slow.agent_id)  # it is no longer running
    finished = {e.description: e.stop_reason for e in events if isinstance(e, AgentFinished) and e.depth == 1}
    assert finished == {"slow one": "cancelled", "quick one": "completed"}
    assert outcome.stop_reason == "completed" and outcome.text == "One was stopped, the other answered."


async def test_background_agents_are_known_and_the_context_use_is_measured(tmp_path: Path) -> None:
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(tool_calls=(task_call("scan", "SCAN: look around", run_in_background=True),)),
            ServerReply(text="Started."),
            ServerReply(text="The scan is done."),
        ],
        "SCAN": [ServerReply(text="nothing found")],
    }
    async with opened(tmp_path, routes) as (app, events):
        conversation = await app.conversation(interactive=True, env={})
        before, window = conversation.context_use()
        outcome = await conversation.run_to_completion("USER: scan")
        after, _ = conversation.context_use()
        scan = started(events, "scan")
        assert scan is not None
        assert conversation.is_background(scan.agent_id)
        assert not conversation.is_background(conversation.session_id)
        assert [session.id for session in app.project_sessions()] == [conversation.session_id]
    assert outcome.text == "The scan is done."
    assert window is not None and window > 0 and before > 0 and after > 0
