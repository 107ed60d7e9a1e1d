"""The user's approval of a project's MCP servers, as UIs handle it: which servers, their state, the question.

A project's servers (a trusted folder's ``.mcp.json`` and ``[mcp_servers]``, and its agent files'
own) start only once the user approved their exact definition (``nestor.tools.mcp.approval``).
``nestor mcp approve`` records approvals; the REPL and the TUI ask before the process's servers
start (:func:`pending_servers`, :func:`approve_servers`, :func:`decline_servers`: a server declined
is not asked about again until its definition changes), and while agents run, through the
conversation's yes/no questions (:func:`approval_asker`, ``nestor acp`` included), about an agent
file's servers.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from nestor.agents.registry import project_registry
from nestor.app.approval_questions import approval_question, yes_no_asker
from nestor.config.settings import ProjectServer, Settings
from nestor.core.permission import PermissionRequest
from nestor.runtime.kernel.permission_gate import PermissionAsker
from nestor.runtime.tree.mcp_tools import own_project_servers
from nestor.store.approvals import Approvals
from nestor.store.db import open_database
from nestor.tools.mcp.approval import ApprovalState, AskApproval, ServerApprovals, not_started_line

__all__ = [
    "ApprovalState",
    "ProjectServer",
    "approval_asker",
    "approval_request",
    "approve_servers",
    "decline_servers",
    "not_started_line",
    "opened_approvals",
    "pending_servers",
    "project_servers",
]


def project_servers(settings: Settings, env: Mapping[str, str] = os.environ) -> list[ProjectServer]:
    """Every MCP server the project defines: its config's, then each of its agent files' own."""
    servers = list(settings.project_mcp_servers.values())
    registry = project_registry(Path(settings.project_root), env, trusted=settings.project_trusted)
    for spec in registry.specs():
        servers.extend(own_project_servers(spec).values())
    return servers


@contextmanager
def opened_approvals(settings: Settings) -> Iterator[ServerApprovals]:
    """The user's approvals of this project's servers, in the session database (closed after).

    Raises:
        StoreError: The database cannot be opened.

    """
    with open_database(settings.database_path) as database:
        yield ServerApprovals(Approvals(database), Path(settings.project_root))


def pending_servers(
    settings: Settings, servers: Sequence[ProjectServer]
) -> list[tuple[ProjectServer, ApprovalState]]:
    """Those of ``servers`` whose definition the user has not approved, and whether another one was.

    Raises:
        StoreError: The database fails.

    """
    with opened_approvals(settings) as approvals:
        states: list[tuple[ProjectServer, ApprovalState]] = [
            (server, approvals.state(server)) for server in servers
        ]
    return [(server, state) for server, state in states if state != "approved"]


def approve_servers(settings: Settings, servers: Sequence[ProjectServer]) -> None:
    """Record the user's approval of each of ``servers``' definitions.

    Raises:
        StoreError: The database fails.

    """
    with opened_approvals(settings) as approvals:
        for server in servers:
            approvals.approve(server)


def decline_servers(settings: Settings, servers: Sequence[ProjectServer]) -> None:
    """Record that the user declined each of ``servers``' definitions: they are not asked about again.

    Raises:
        StoreError: The database fails.

    """
    with opened_approvals(settings) as approvals:
        for server in servers:
            approvals.decline(server)


def approval_request(server: ProjectServer, state: ApprovalState) -> PermissionRequest:
    """The yes/no question about starting ``server``: its definition is the request's target."""
    changed = ", whose definition changed since you approved it" if state == "changed" else ""
    description = f"Start MCP server {server.name} (defined by {server.origin}){changed}"
    return approval_question("mcp_server", server.definition, description)


def approval_asker(asker: PermissionAsker, agent_id: str) -> AskApproval:
    """Ask through a conversation's permission questions, on behalf of ``agent_id``: yes approves."""
    ask = yes_no_asker(asker, agent_id)

    async def ask_server(server: ProjectServer, state: ApprovalState) -> bool:
        return await ask(approval_request(server, state))

    return ask_server
