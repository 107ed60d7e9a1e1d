"""A yes/no question of approval, asked through a conversation's permission questions.

A project's MCP server (:mod:`nestor.app.mcp_approvals`) and a project's hook
(:mod:`nestor.app.hook_setup`) are approved by the user, never by a mode or a rule: the question
offers yes and no only (:data:`~nestor.core.permission.YES_NO`), and each UI shows it as its other
permission questions (``nestor acp``: ``session/request_permission`` with "Yes" and "No").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from nestor.core.permission import YES_NO, PermissionRequest
from nestor.runtime.kernel.permission_gate import PermissionAsker
from nestor.runtime.kernel.permission_questions import PermissionQuestions

AskYesNo = Callable[[PermissionRequest], Awaitable[bool]]
"""Asks the user to approve what a request describes; True for yes."""


def approval_question(tool_name: str, target: str, description: str) -> PermissionRequest:
    """A yes/no question of approval: ``target`` is what would run, and no rule is granted by it."""
    return PermissionRequest(
        tool_name=tool_name, action="execute", target=target, description=description, grant_key=""
    )


def yes_no_asker(asker: PermissionAsker, agent_id: str) -> AskYesNo:
    """Ask through a conversation's permission questions, on behalf of ``agent_id``: yes approves.

    The conversation's own questions offer yes and no; another asker's "once" and "for this
    session" both approve.
    """

    async def ask(request: PermissionRequest) -> bool:
        if isinstance(asker, PermissionQuestions):
            answer = await asker(request, agent_id, choices=YES_NO)
        else:
            answer = await asker(request, agent_id)
        return answer != "deny"

    return ask
