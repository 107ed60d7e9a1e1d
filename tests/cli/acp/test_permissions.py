"""Permission questions over ACP: the options offered, and what no mode may answer by itself."""

from __future__ import annotations

from nestor.cli.acp.permissions import PermissionBridge, permission_options
from nestor.core.events import PermissionAsked, PermissionRequested
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
    announced = PermissionAsked(agent_id="ses_main", tool_call_id="c1", tool_name="bash", target="git status")
    call = PermissionRequested(agent_id="ses_main", request_id="q1", request=REQUEST)
    approval = PermissionRequested(agent_id="ses_main", request_id="q2", request=REQUEST, choices=YES_NO)

    bridge.handle(announced)
    bridge.handle(call)
    bridge.handle(approval)  # waits for the editor (a task, withdrawn before it runs)
    bridge.withdraw_all()

    assert answers.given == [("q1", "once")]


class _CallIds:
    """The translator's part the bridge uses: the editor's id of a tool call."""

    def call_id(self, agent_id: str, tool_call_id: str) -> str:
        return f"{agent_id}/{tool_call_id}"


async def test_no_mode_answers_a_question_marked_for_a_person_or_one_never_announced() -> None:
    answers = _Answers()
    bridge = PermissionBridge(
        None,  # type: ignore[arg-type]  # the editor is never reached in this test
        "ses_main",
        answers,  # type: ignore[arg-type]
        _CallIds(),  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        lambda: "yolo",
    )
    into_git = PermissionAsked(
        agent_id="ses_main", tool_call_id="c1", tool_name="write", target=".git/config", must_ask=True
    )

    bridge.handle(into_git)
    bridge.handle(PermissionRequested(agent_id="ses_main", request_id="q1", request=REQUEST))
    bridge.handle(PermissionRequested(agent_id="ses_main", request_id="q2", request=REQUEST))  # unannounced
    bridge.withdraw_all()

    assert answers.given == []
