"""What the user approved of the definitions a project brings: each by its kind, project, name and hash.

A trusted project still brings commands nestor would run: MCP servers (``kind = "mcp_server"``)
and hooks (``kind = "hook"``). Each runs only once the user has seen and approved its exact
definition, as Codex does for project hooks; an approval covers one definition's hash, so a changed definition
is asked about again. Every definition approved is kept: going back to one approved before needs
no new approval. A definition the user declined is kept too, so that it is not asked about again
(until it changes; approving it by command still works). Trusting a folder approves nothing.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal, TypeAlias

from nestor.store.db import Database

ApprovalKind: TypeAlias = Literal["mcp_server", "hook"]
"""What is approved."""
ApprovalState: TypeAlias = Literal["approved", "declined", "changed", "new"]
"""``declined``: the user said no to this definition; ``changed``: the user approved another
definition of this name, not this one; ``new``: neither."""


class Approvals:
    """The user's approvals, in the session database.

    Args:
        database: The open session database.

    """

    def __init__(self, database: Database) -> None:
        self._database = database

    def is_approved(self, kind: ApprovalKind, project: Path, name: str, digest: str) -> bool:
        """Whether the user approved the definition ``digest`` of ``name`` in ``project``.

        Raises:
            StoreError: The database failed.

        """
        row = self._database.fetch_one(
            "SELECT 1 FROM approvals WHERE kind = ? AND project_path = ? AND name = ? AND digest = ?",
            (kind, _key(project), name, digest),
        )
        return row is not None

    def approved_before(self, kind: ApprovalKind, project: Path, name: str) -> bool:
        """Whether the user approved some definition of ``name`` in ``project`` (a changed one, if not this).

        Raises:
            StoreError: The database failed.

        """
        row = self._database.fetch_one(
            "SELECT 1 FROM approvals WHERE kind = ? AND project_path = ? AND name = ?",
            (kind, _key(project), name),
        )
        return row is not None

    def state(self, kind: ApprovalKind, project: Path, name: str, digest: str) -> ApprovalState:
        """Whether the definition ``digest`` of ``name`` is approved, declined, another one approved, or none.

        Raises:
            StoreError: The database failed.

        """
        if self.is_approved(kind, project, name, digest):
            return "approved"
        declined = self._database.fetch_one(
            "SELECT 1 FROM declines WHERE kind = ? AND project_path = ? AND name = ? AND digest = ?",
            (kind, _key(project), name, digest),
        )
        if declined is not None:
            return "declined"
        if self.approved_before(kind, project, name):
            return "changed"
        return "new"

    def approve(self, kind: ApprovalKind, project: Path, name: str, digest: str) -> None:
        """Record the user's approval of the definition ``digest`` of ``name`` in ``project``.

        Raises:
            StoreError: The database failed.

        """
        self._database.execute(
            "INSERT OR IGNORE INTO approvals (kind, project_path, name, digest, approved_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (kind, _key(project), name, digest, time.time()),
        )

    def decline(self, kind: ApprovalKind, project: Path, name: str, digest: str) -> None:
        """Record that the user declined the definition ``digest`` of ``name`` in ``project``.

        Raises:
            StoreError: The database failed.

        """
        self._database.execute(
            "INSERT OR IGNORE INTO declines (kind, project_path, name, digest, declined_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (kind, _key(project), name, digest, time.time()),
        )


def _key(project: Path) -> str:
    """The project as stored: its resolved path, as trusted folders are keyed."""
    return str(project.expanduser().resolve())
