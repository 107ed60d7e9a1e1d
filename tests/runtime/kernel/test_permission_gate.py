from __future__ import annotations

from nestor.bus import EventBus
from nestor.core.events import Event, PermissionAsked
from nestor.core.permission import PermissionRequest
from nestor.permissions import PermissionPolicy
from nestor.runtime.kernel.permission_gate import PermissionAnswer, PermissionGate

PUSH = PermissionRequest(
    tool_name="bash", action="execute", target="git push", description="Run: git push", grant_key="git push"
)


def gate(
    answers: list[PermissionAnswer] | None, policy: PermissionPolicy | None = None
) -> tuple[PermissionGate, list[Event]]:
    bus = EventBus()
    events: list[Event] = []
    bus.subscribe(events.append)

    async def asker(request: PermissionRequest, agent_id: str) -> PermissionAnswer:
        assert answers is not None and agent_id == "ses_x"
        return answers.pop(0)

    return PermissionGate(
        policy or PermissionPolicy(project_root="/repo"), asker if answers is not None else None, bus, "ses_x"
    ), events


async def test_asked_question_and_answer_are_events() -> None:
    subject, events = gate(["once"])
    verdict = await subject.settle(PUSH, "call_1")
    assert verdict.allowed and verdict.decision.kind == "ask"
    asked = [e for e in events if isinstance(e, PermissionAsked)]
    assert [(e.decision, e.tool_call_id) for e in asked] == [(None, "call_1"), ("allow", "call_1")]


async def test_session_answer_is_remembered_and_deny_is_not() -> None:
    subject, _ = gate(["session"])
    assert await subject.allows(PUSH, "c1")
    assert await subject.allows(PUSH, "c2")  # no second question: the asker would fail on an empty list
    denying, _ = gate(["deny", "deny"])
    assert not await denying.allows(PUSH, "c1")
    assert not await denying.allows(PUSH, "c2")


async def test_refusals_say_why_and_what_to_do() -> None:
    headless, events = gate(None)
    verdict = await headless.settle(PUSH, "c1")
    assert not verdict.allowed
    assert "non-interactive" in headless.refusal(PUSH, verdict.decision)
    assert events and isinstance(events[-1], PermissionAsked) and events[-1].decision == "deny"

    ruled, _ = gate([], PermissionPolicy.from_config([], [], ["bash(git push*)"], project_root="/repo"))
    verdict = await ruled.settle(PUSH, "c1")
    assert ruled.refusal(PUSH, verdict.decision).startswith("Permission denied by rule bash(git push*)")

    user, _ = gate(["deny"])
    verdict = await user.settle(PUSH, "c1")
    assert user.refusal(PUSH, verdict.decision).startswith("The user denied: Run: git push")


async def test_allowed_by_rule_passes_silently() -> None:
    subject, events = gate(None, PermissionPolicy.from_config(["bash(git *)"], [], [], project_root="/repo"))
    assert await subject.allows(PUSH, "c1")
    assert events == []


ASK_PUSH = ([], ["bash(git push*)"], [])


async def test_an_ask_rule_still_asks_under_yolo() -> None:
    policy = PermissionPolicy.from_config(*ASK_PUSH, project_root="/repo", yolo=True)
    subject, events = gate(["once"], policy)
    verdict = await subject.settle(PUSH, "call_1")
    assert verdict.allowed and verdict.decision.kind == "ask"
    assert [e.decision for e in events if isinstance(e, PermissionAsked)] == [None, "allow"]


async def test_headless_under_yolo_an_ask_rule_denies_and_says_yolo_does_not_override_it() -> None:
    policy = PermissionPolicy.from_config(*ASK_PUSH, project_root="/repo", yolo=True)
    subject, _ = gate(None, policy)
    verdict = await subject.settle(PUSH, "call_1")
    assert not verdict.allowed
    refusal = subject.refusal(PUSH, verdict.decision)
    assert "rule ask bash(git push*)" in refusal and "--yolo does not override ask rules" in refusal
    assert "rerun with --yolo" not in refusal and "Do not retry" in refusal
