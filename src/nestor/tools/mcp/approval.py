"""Which of a project's MCP servers may start: those whose exact definition the user approved.

A trusted project's ``.mcp.json``, ``[mcp_servers]`` and agent files define servers, each a command
nestor would run or an address it would send headers to. Trusting the folder is not enough: each
server starts only once the user approved its definition as written
(:class:`~nestor.config.settings.ProjectServer`), stored by its hash
(:class:`~nestor.store.approvals.Approvals`), as Codex does for project hooks. A changed definition
needs a new approval. Where someone can answer (the REPL, the TUI), the user is asked when the
server would first start; elsewhere (``nestor run``, ``nestor mcp serve``) the server is skipped and
the run says so in one line, naming ``nestor mcp approve``. A server skipped is not asked about
again in the same process, and one declined is not asked about again at all until its definition
changes (the decline is stored beside the approvals; ``nestor mcp approve`` still approves it).

This module does not import the ``mcp`` SDK.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from nestor.config.settings import ProjectServer
from nestor.core.errors import StoreError
from nestor.store.approvals import Approvals, ApprovalState

AskApproval = Callable[[ProjectServer, ApprovalState], Awaitable[bool]]
"""Shows the user a server's definition and returns whether they approve it."""


class ServerApprovals:
    """The user's approvals of a project's MCP servers, and the decisions taken in this process.

    Args:
        approvals: Where approvals are stored.
        project_root: The project the servers belong to.
        notify: Tells the user, in one line, that a server was not approved and did not start.

    """

    def __init__(
        self,
        approvals: Approvals,
        project_root: Path,
        *,
        notify: Callable[[str], None] = lambda _message: None,
    ) -> None:
        self._approvals = approvals
        self._project_root = project_root
        self._notify = notify
        self._refused: set[tuple[str, str]] = set()
        self._asking: dict[tuple[str, str], asyncio.Lock] = {}

    def state(self, server: ProjectServer) -> ApprovalState:
        """Whether ``server``'s definition is approved, another of its definitions was, or none.

        Raises:
            StoreError: The database failed.

        """
        return self._approvals.state("mcp_server", self._project_root, server.name, server.digest)

    def approve(self, server: ProjectServer) -> None:
        """Record the user's approval of ``server``'s definition.

        Raises:
            StoreError: The database failed.

        """
        self._approvals.approve("mcp_server", self._project_root, server.name, server.digest)
        self._refused.discard((server.name, server.digest))

    def decline(self, server: ProjectServer) -> None:
        """Record that the user declined ``server``'s definition: it is not asked about again.

        Raises:
            StoreError: The database failed.

        """
        self._approvals.decline("mcp_server", self._project_root, server.name, server.digest)

    async def allows(self, server: ProjectServer, *, ask: AskApproval | None = None) -> bool:
        """Whether ``server`` may start: approved, or approved now through ``ask``.

        Without ``ask``, or when the user declined this definition before, an unapproved server is
        named in one line (once) and does not start; a server the user declines now is stored as
        declined.
        """
        key = (server.name, server.digest)
        async with self._asking.setdefault(key, asyncio.Lock()):  # one question per definition
            if key in self._refused:
                return False
            try:
                state = self.state(server)
                if state == "approved":
                    return True
                asked = ask is not None and state != "declined"
                if ask is not None and asked:
                    if await ask(server, state):
                        self.approve(server)
                        return True
                    self.decline(server)
            except StoreError as error:
                self._notify(f"MCP server {server.name} ({server.origin}) did not start: {error.message}")
                self._refused.add(key)
                return False
            self._refused.add(key)
            if not asked:
                self._notify(not_started_line(server, state))
            return False


_WHY: dict[ApprovalState, str] = {"changed": "changed since you approved it", "declined": "was declined"}


def not_started_line(server: ProjectServer, state: ApprovalState) -> str:
    """The line that says a project's server did not start for want of approval, and what to do."""
    why = _WHY.get(state, "is not approved")
    return (
        f"MCP server {server.name} ({server.origin}) {why}, so it did not start; "
        f"`nestor mcp approve {server.name}` shows its definition and approves it"
    )
