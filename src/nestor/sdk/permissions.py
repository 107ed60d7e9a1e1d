"""The questions nestor's rules leave open, answered by ``permission_mode`` and a program's ``can_use_tool``.

A question is about the tool call the gate announced just before it (``nestor.app.question_tasks``,
as ``nestor acp`` follows them too), whose input its :class:`~nestor.core.events.ToolStarted` gave.
``acceptEdits`` answers an edit inside the project itself (``nestor.app.permission_modes``); the
rest goes to ``can_use_tool``, and without one is refused; a question only a person may answer (a
write into a git dir) is never the callback's either. A yes/no question (a project's MCP server
to approve) is never the callback's: it is refused, as a headless run skips the server.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from nestor.app.permission_modes import ModeId, answers_itself
from nestor.app.question_tasks import QuestionTasks
from nestor.core.events import (
    Event,
    PermissionAsked,
    PermissionRequested,
    ToolStarted,
)
from nestor.sdk.types import CanUseTool, PermissionResultAllow, PermissionResultDeny, ToolPermissionContext

if TYPE_CHECKING:
    from nestor.app.conversation import Conversation
    from nestor.sdk.messages import MessageFeed

_NOBODY = (
    "Permission denied: {description}. Nobody can approve it here (the program gave nestor no "
    "can_use_tool callback); do not retry this call."
)

_PERSON_ONLY = (
    "Permission denied: {description}. Only a person may allow this (a write into a git dir, where "
    "what is written runs at the user's next git), and no callback answers it; the user can allow it "
    "with a rule naming that path. Do not retry this call."
)


class PermissionAnswers:
    """Answers one conversation's permission questions for the SDK.

    Args:
        conversation: Where the answers go (and what ``interrupt`` stops).
        feed: Knows each agent's place in the tree, and carries a refusal's words to the model.
        can_use_tool: The embedder's callback; None refuses what the mode does not answer.
        mode: Which questions are answered without the callback.

    """

    def __init__(
        self, conversation: Conversation, feed: MessageFeed, can_use_tool: CanUseTool | None, mode: ModeId
    ) -> None:
        self._conversation = conversation
        self._feed = feed
        self._can_use_tool = can_use_tool
        self._mode: ModeId = mode
        self._inputs: dict[str, dict[str, Any]] = {}
        self._questions = QuestionTasks()

    def handle(self, event: Event) -> None:
        """Follow the tool calls and permission questions of the tree (a bus handler)."""
        if isinstance(event, ToolStarted):
            self._inputs[event.tool_call_id] = dict(event.args)
        question = self._questions.follow(event)
        if question is not None:
            asked_event, asked = question
            name = f"sdk-permission-{asked_event.request_id}"
            self._questions.answer_in_task(asked_event.request_id, self._answer(asked_event, asked), name)

    async def _answer(self, event: PermissionRequested, asked: PermissionAsked | None) -> None:
        request = event.request
        if asked is None or "session" not in event.choices:  # not a tool call's: a server to approve
            self._conversation.answer(event.request_id, "deny")
            return
        must_ask = asked.must_ask
        if answers_itself(self._mode, request, asked.rule, must_ask=must_ask):
            self._conversation.answer(event.request_id, "once")
            return
        call_id = asked.tool_call_id
        if must_ask:  # only a person may allow it: a callback that allows everything must not
            self._refuse(event, call_id, _PERSON_ONLY.format(description=request.description))
            return
        if self._can_use_tool is None:
            self._refuse(event, call_id, _NOBODY.format(description=request.description))
            return
        place = self._feed.place(event.agent_id)
        context = ToolPermissionContext(
            tool_use_id=call_id,
            agent_id=event.agent_id,
            agent_type=place.agent_type,
            parent_tool_use_id=place.parent_tool_use_id,
            target=request.target,
            description=request.description,
        )
        tool_input = self._inputs.get(call_id, {})
        try:
            result = await self._can_use_tool(asked.tool_name, dict(tool_input), context)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the embedder's bug refuses the call, never allows it
            self._refuse(
                event, call_id, f"Permission denied: can_use_tool failed ({type(error).__name__}: {error})."
            )
            return
        self._apply(event, call_id, tool_input, result)

    def _apply(
        self, event: PermissionRequested, call_id: str, tool_input: dict[str, Any], result: object
    ) -> None:
        if isinstance(result, PermissionResultAllow):
            if result.updated_input is not None and result.updated_input != tool_input:
                self._refuse(
                    event,
                    call_id,
                    "Permission denied: the program's permission callback changed this call's input, and "
                    "nestor runs a call only as the model sent it. Send the call again as it should run.",
                )
            elif result.updated_permissions:
                self._refuse(event, call_id, "Permission denied: nestor cannot apply updated_permissions.")
            else:
                self._conversation.answer(event.request_id, "once")
            return
        if isinstance(result, PermissionResultDeny):
            self._refuse(
                event, call_id, result.message or f"The program denied: {event.request.description}."
            )
            if result.interrupt:
                self._conversation.cancel()
            return
        self._refuse(event, call_id, f"Permission denied: can_use_tool returned {type(result).__name__}.")

    def _refuse(self, event: PermissionRequested, call_id: str, message: str) -> None:
        self._feed.replaced[call_id] = message
        self._conversation.answer(event.request_id, "deny")

    def withdraw_all(self) -> None:
        """Stop every callback still deciding (the client disconnects)."""
        self._questions.withdraw_all()
