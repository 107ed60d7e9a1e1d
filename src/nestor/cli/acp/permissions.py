"""Permission questions as ``session/request_permission``: the editor answers, nestor never does.

A question nestor would ask (a :class:`~nestor.core.events.PermissionRequested` event) goes to the
editor with the tool call it is about (its card: the diff of an edit, the command of ``bash``) and
three options: allow once, allow for the session (naming the rule it amounts to), reject. Anything
but an allow is a refusal: a cancelled prompt, an error from the client, no answer within
:data:`ANSWER_TIMEOUT_S`. A question withdrawn by nestor (its run was stopped) stops waiting.

Only the session's mode answers without the editor (:func:`~nestor.cli.acp.modes.answers_itself`),
and only the questions no ask rule raised and nestor does not mark as a person's to answer.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import acp
from acp.schema import PermissionOption, ToolCallProgress, ToolCallUpdate

from nestor.app.question_tasks import QuestionTasks
from nestor.cli.acp.modes import ModeId, answers_itself
from nestor.cli.acp.tool_calls import text_content
from nestor.cli.formatting import suggested_rule
from nestor.core.events import Event, PermissionRequested
from nestor.core.permission import PERMISSION_CHOICES

if TYPE_CHECKING:
    from nestor.app import Conversation
    from nestor.cli.acp.outbox import Outbox
    from nestor.cli.acp.updates import UpdateTranslator
    from nestor.core.permission import PermissionAnswer, PermissionRequest

ANSWER_TIMEOUT_S = 1800.0
"""A question nobody answers in this long is refused (the model is told so and carries on)."""

_ANSWERS: dict[str, PermissionAnswer] = {"allow_once": "once", "allow_session": "session", "reject": "deny"}


def permission_options(
    request: PermissionRequest, *, sub_agent: bool, choices: tuple[PermissionAnswer, ...] = PERMISSION_CHOICES
) -> list[PermissionOption]:
    """Allow once, allow always (for the session, naming the rule), reject: those ``choices`` offers.

    A yes/no question (no ``session`` among ``choices``: a project's MCP server or hook to
    approve) gets "Yes" and "No".
    """
    if "session" not in choices:
        return [
            PermissionOption(option_id="allow_once", name="Yes", kind="allow_once"),
            PermissionOption(option_id="reject", name="No", kind="reject_once"),
        ]
    scope = "this agent's session" if sub_agent else "this session"
    return [
        PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
        PermissionOption(
            option_id="allow_session",
            name=f"Allow for {scope}: {suggested_rule(request)}",
            kind="allow_always",
        ),
        PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
    ]


class PermissionBridge:
    """Sends one conversation's permission questions to the editor and its answers back.

    Args:
        conn: The client.
        session_id: The ACP session (the main agent's id).
        conversation: Where answers go.
        translator: Knows the tool calls the questions are about.
        outbox: The session's updates: a question waits until its tool call was sent.
        mode: Returns the session's mode now.
        timeout_s: How long a question waits for the editor.

    """

    def __init__(
        self,
        conn: acp.Client,
        session_id: str,
        conversation: Conversation,
        translator: UpdateTranslator,
        outbox: Outbox,
        mode: Callable[[], ModeId],
        timeout_s: float = ANSWER_TIMEOUT_S,
    ) -> None:
        self._conn = conn
        self._session_id = session_id
        self._conversation = conversation
        self._translator = translator
        self._outbox = outbox
        self._mode = mode
        self._timeout_s = timeout_s
        self._questions = QuestionTasks()

    def handle(self, event: Event) -> None:
        """Follow the permission events of the tree."""
        question = self._questions.follow(event)
        if question is None:
            return
        event, asked = question
        # A yes/no question approves a definition (a project's MCP server or hook), not a call: no
        # mode answers it, as --yolo and --trust approve no server or hook either.
        yes_no = "session" not in event.choices
        rule = asked.rule if asked is not None else None
        must_ask = asked is None or asked.must_ask  # unannounced: the editor's to answer
        if not yes_no and answers_itself(self._mode(), event.request, rule, must_ask=must_ask):
            self._conversation.answer(event.request_id, "once")
            return
        call_id = self._translator.call_id(event.agent_id, asked.tool_call_id) if asked else ""
        self._questions.answer_in_task(
            event.request_id, self._ask(event, call_id), name=f"acp-permission-{event.request_id}"
        )

    def withdraw_all(self) -> None:
        """Stop waiting for the editor's answers (the prompt was cancelled, which refuses them)."""
        self._questions.withdraw_all()

    async def _ask(self, event: PermissionRequested, call_id: str) -> None:
        answer: PermissionAnswer = "deny"
        try:
            await self._outbox.flush()  # the editor knows the call before it is asked about it
            answer = await asyncio.wait_for(self._request(event, call_id), self._timeout_s)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            print(
                f"nestor: no answer to a permission question in {self._timeout_s:.0f}s; it was refused",
                file=sys.stderr,
            )
        except Exception as exc:  # the client failed to answer: a refusal, never an allow
            print(f"nestor: permission request failed ({exc}); it was refused", file=sys.stderr)
        self._conversation.answer(event.request_id, answer)
        if answer != "deny" and call_id:
            progress = ToolCallProgress(
                session_update="tool_call_update", tool_call_id=call_id, status="in_progress"
            )
            self._outbox.put(progress)

    async def _request(self, event: PermissionRequested, call_id: str) -> PermissionAnswer:
        request = event.request
        known = self._translator.calls.get(call_id)
        detail = request.description + (" (outside the project)" if request.outside_project else "")
        if "session" not in event.choices:  # a definition to approve: the editor shows what it is
            detail += f":\n{request.target}"
        tool_call = ToolCallUpdate(
            tool_call_id=call_id or event.request_id,
            title=known.view.title if known is not None else request.description,
            kind=known.view.kind if known is not None else None,
            status="pending",
            content=[*known.view.content, text_content(detail)]
            if known is not None
            else [text_content(detail)],
            locations=known.view.locations or None if known is not None else None,
            raw_input=_raw_input(request),
            field_meta=self._translator.meta(event.agent_id),
        )
        sub_agent = event.agent_id != self._translator.main_id
        response = await self._conn.request_permission(
            session_id=self._session_id,
            tool_call=tool_call,
            options=permission_options(request, sub_agent=sub_agent, choices=event.choices),
        )
        outcome = response.outcome
        if outcome.outcome != "selected":
            return "deny"
        return _ANSWERS.get(getattr(outcome, "option_id", ""), "deny")


def _raw_input(request: PermissionRequest) -> dict[str, Any]:
    return {"tool": request.tool_name, "action": request.action, "target": request.target}
