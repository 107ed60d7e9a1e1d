"""Permission questions over ACP: the options offered, and what no mode may answer by itself."""

from __future__ import annotations

from nestor.cli.acp.permissions import PermissionBridge, permission_options
from nestor.core.events import PermissionRequested
from nestor.core.permission import PERMISSION_CHOICES, YES_NO, PermissionRequest

REQUEST = PermissionRequest("bash", "execute", "git status", "Run: git status", grant_key="git status")


def test_a_tool_call_offers_once_for_the_session_and_reject() -> None:
    options = permission_options(REQUEST, sub_agent=False, choices=PERMISSION_CHOICES)

    assert [option.kind for option in options] == ["allow_once", "allow_always", "reject_once"]
    assert "bash(git status)" in options[1].name


def test_a_yes_no_question_offers_only_yes_and_no() -> None:
    # A project's MCP server to approve: allowing it "for the session" means nothing.
    options = permission_options(REQUEST, sub_agent=True, choices=YES_NO)

    assert [(option.name, option.kind) for option in options] == [
        ("Yes", "allow_once"),
        ("No", "reject_once"),
    ]


class _Answers:
    """Where the bridge sends answers (the conversation's ``answer``)."""

    def __init__(self) -> None:
        self.given: list[tuple[str, str]] = []

    def answer(self, request_id: str, answer: str) -> None:
        self.given.append((request_id, answer))


async def test_yolo_answers_a_tool_call_but_never_approves_a_definition() -> None:
    answers = _Answers()
    bridge = PermissionBridge(
        None,  # type: ignore[arg-type]  # the editor is never reached in this test
        "ses_main",
        answers,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        lambda: "yolo",
    )
    call = PermissionRequested(agent_id="ses_main", request_id="q1", request=REQUEST)
    approval = PermissionRequested(agent_id="ses_main", request_id="q2", request=REQUEST, choices=YES_NO)

    bridge.handle(call)
    bridge.handle(approval)  # waits for the editor (a task, withdrawn before it runs)
    bridge.withdraw_all()

    assert answers.given == [("q1", "once")]
