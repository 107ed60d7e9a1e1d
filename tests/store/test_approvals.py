"""Approvals of a project's definitions: by kind, project, name and the exact definition's hash."""

from __future__ import annotations

from pathlib import Path

from nestor.store import open_database
from nestor.store.approvals import Approvals


def test_an_approval_holds_for_its_exact_definition_in_its_project_and_survives_reopening(
    tmp_path: Path,
) -> None:
    project, other = tmp_path / "project", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    with open_database(tmp_path / "nestor.db") as db:
        approvals = Approvals(db)
        assert not approvals.is_approved("mcp_server", project, "docs", "aaa")
        assert not approvals.approved_before("mcp_server", project, "docs")
        approvals.approve("mcp_server", project, "docs", "aaa")
        approvals.approve("mcp_server", project, "docs", "aaa")  # twice is once

    with open_database(tmp_path / "nestor.db") as db:
        approvals = Approvals(db)
        assert approvals.is_approved("mcp_server", project / "." / "", "docs", "aaa")
        assert not approvals.is_approved("mcp_server", project, "docs", "bbb")  # changed: ask again
        assert approvals.approved_before("mcp_server", project, "docs")
        assert not approvals.is_approved("mcp_server", other, "docs", "aaa")
        assert not approvals.is_approved("mcp_server", project, "lint", "aaa")
        approvals.approve("mcp_server", project, "docs", "bbb")
        assert approvals.is_approved("mcp_server", project, "docs", "aaa")  # going back needs no new one
        assert len(db.fetch_all("SELECT * FROM approvals")) == 2


def test_a_link_to_the_project_shares_its_approvals(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "link").symlink_to(project)
    with open_database(tmp_path / "nestor.db") as db:
        Approvals(db).approve("mcp_server", tmp_path / "link", "docs", "aaa")
        assert Approvals(db).is_approved("mcp_server", project, "docs", "aaa")


def test_a_decline_holds_for_its_exact_definition_until_it_changes_and_approving_wins(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with open_database(tmp_path / "nestor.db") as db:
        approvals = Approvals(db)
        approvals.decline("hook", project, "fmt", "aaa")
        approvals.decline("hook", project, "fmt", "aaa")  # twice is once
    with open_database(tmp_path / "nestor.db") as db:
        approvals = Approvals(db)
        assert approvals.state("hook", project, "fmt", "aaa") == "declined"
        assert approvals.state("hook", project, "fmt", "bbb") == "new"  # changed: asked again
        assert approvals.state("mcp_server", project, "fmt", "aaa") == "new"  # another kind
        approvals.approve("hook", project, "fmt", "aaa")  # nestor hooks approve, after a no
        assert approvals.state("hook", project, "fmt", "aaa") == "approved"
        approvals.decline("hook", project, "fmt", "bbb")
        assert approvals.state("hook", project, "fmt", "bbb") == "declined"  # not "changed": a no holds
