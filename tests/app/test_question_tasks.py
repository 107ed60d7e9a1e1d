"""``QuestionTasks``: each question with the call announced before it, its task stopped when withdrawn."""

from __future__ import annotations

import asyncio

from nestor.app.question_tasks import QuestionTasks
from nestor.core.events import PermissionAsked, PermissionRequested, PermissionWithdrawn
from nestor.core.permission import YES_NO, PermissionRequest

REQUEST = PermissionRequest("write", "write", "/p/a.py", "Write a.py")


def asked(agent_id: str, call_id: str) -> PermissionAsked:
    return PermissionAsked(agent_id=agent_id, tool_call_id=call_id, tool_name="write", target="/p/a.py")


async def test_a_question_comes_with_its_agents_announced_call_and_a_withdrawal_stops_its_task() -> None:
    questions = QuestionTasks()
    assert questions.follow(asked("a", "call_a")) is None
    assert questions.follow(asked("b", "call_b")) is None
    question = questions.follow(PermissionRequested(agent_id="b", request_id="q1", request=REQUEST))
    assert question is not None and question[1] is not None and question[1].tool_call_id == "call_b"
    unannounced = questions.follow(
        PermissionRequested(agent_id="b", request_id="q2", request=REQUEST, choices=YES_NO)
    )
    assert unannounced is not None and unannounced[1] is None  # a server to approve: no call of its own

    stopped = asyncio.Event()

    async def answering() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            stopped.set()
            raise

    questions.answer_in_task("q1", answering(), name="q1")
    await asyncio.sleep(0)
    questions.follow(PermissionWithdrawn(agent_id="b", request_id="q1"))
    async with asyncio.timeout(5):
        await stopped.wait()
