"""Approving a project's MCP servers: once per exact definition, asked once, named where nobody answers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from nestor.config.settings import ProjectServer
from nestor.store import Database, open_database
from nestor.store.approvals import Approvals
from nestor.tools.mcp.approval import ApprovalState, ServerApprovals

DOCS = ProjectServer.of("docs", ".mcp.json", {"url": "https://docs.example.com/mcp"})
CHANGED = ProjectServer.of("docs", ".mcp.json", {"url": "https://elsewhere.example.com/mcp"})


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    with open_database(tmp_path / "nestor.db") as opened:
        yield opened


class User:
    """Answers each question after a pause (so that questions could overlap), and counts them."""

    def __init__(self, yes: bool) -> None:
        self.yes = yes
        self.asked: list[tuple[str, ApprovalState]] = []

    async def ask(self, server: ProjectServer, state: ApprovalState) -> bool:
        self.asked.append((server.definition, state))
        await asyncio.sleep(0.05)
        return self.yes


async def test_a_yes_is_stored_for_that_definition_and_a_changed_one_is_asked_about_again(
    database: Database, tmp_path: Path
) -> None:
    approvals = ServerApprovals(Approvals(database), tmp_path)
    user = User(yes=True)

    assert await approvals.allows(DOCS, ask=user.ask)
    assert await ServerApprovals(Approvals(database), tmp_path).allows(DOCS)  # another process: stored
    assert approvals.state(CHANGED) == "changed"
    assert await approvals.allows(CHANGED, ask=user.ask)
    assert user.asked == [(DOCS.definition, "new"), (CHANGED.definition, "changed")]


async def test_one_definition_is_asked_about_once_even_when_two_agents_start_it_at_once_and_a_no_is_kept(
    database: Database, tmp_path: Path
) -> None:
    approvals = ServerApprovals(Approvals(database), tmp_path)
    user = User(yes=False)

    assert await asyncio.gather(*(approvals.allows(DOCS, ask=user.ask) for _ in range(3))) == [False] * 3
    assert not await approvals.allows(DOCS, ask=user.ask)  # a no holds for the process
    assert user.asked == [(DOCS.definition, "new")]
    assert approvals.state(DOCS) == "declined"

    # ...and for the next process, named in one line instead of asked, until the definition changes.
    notices: list[str] = []
    later = ServerApprovals(Approvals(database), tmp_path, notify=notices.append)
    assert not await later.allows(DOCS, ask=user.ask)
    assert user.asked == [(DOCS.definition, "new")]
    assert notices == [
        "MCP server docs (.mcp.json) was declined, so it did not start; "
        "`nestor mcp approve docs` shows its definition and approves it"
    ]
    assert not await later.allows(CHANGED, ask=user.ask)
    assert user.asked == [(DOCS.definition, "new"), (CHANGED.definition, "new")]
    later.approve(DOCS)  # nestor mcp approve: a declined definition is approved as any other
    assert approvals.state(DOCS) == "approved"


async def test_with_nobody_to_ask_the_server_is_named_once_with_what_to_do(
    database: Database, tmp_path: Path
) -> None:
    notices: list[str] = []
    approvals = ServerApprovals(Approvals(database), tmp_path, notify=notices.append)
    Approvals(database).approve("mcp_server", tmp_path, "docs", DOCS.digest)

    assert not await approvals.allows(CHANGED)
    assert not await approvals.allows(CHANGED)
    assert notices == [
        "MCP server docs (.mcp.json) changed since you approved it, so it did not start; "
        "`nestor mcp approve docs` shows its definition and approves it"
    ]


async def test_a_failing_database_is_one_line_and_the_server_does_not_start(tmp_path: Path) -> None:
    notices: list[str] = []
    database = open_database(tmp_path / "nestor.db")
    database.close()
    approvals = ServerApprovals(Approvals(database), tmp_path, notify=notices.append)

    assert not await approvals.allows(DOCS, ask=User(yes=True).ask)
    (notice,) = notices
    assert notice.startswith("MCP server docs (.mcp.json) did not start: ") and "\n" not in notice
