"""path_permission and ToolContext: which reads and writes need a permission request."""

from __future__ import annotations

from pathlib import Path

import pytest

from nestor.tools.base import ToolContext, path_permission


@pytest.fixture
def scratch_ctx(tmp_path: Path) -> ToolContext:
    project = tmp_path / "project"
    project.mkdir()
    return ToolContext(project_root=project, scratch_dir=tmp_path / "scratch" / "session-1")


def test_read_inside_the_project_is_a_request_the_rules_see(scratch_ctx: ToolContext) -> None:
    # The rules allow it by default, but a deny rule must get to see it.
    request = path_permission("view", "read", "src/a.py", scratch_ctx)
    assert request is not None
    assert request.action == "read" and not request.outside_project
    assert request.target == str(scratch_ctx.project_root.resolve() / "src" / "a.py")


def test_read_inside_the_scratch_dir_needs_no_permission(scratch_ctx: ToolContext) -> None:
    assert scratch_ctx.scratch_dir is not None
    saved = scratch_ctx.scratch_dir / "tool-results" / "bash-call_1.txt"

    assert path_permission("view", "read", str(saved), scratch_ctx) is None
    assert path_permission("grep", "read", str(scratch_ctx.scratch_dir), scratch_ctx) is None


def test_read_next_to_the_scratch_dir_still_asks(scratch_ctx: ToolContext, tmp_path: Path) -> None:
    for elsewhere in (tmp_path / "scratch" / "session-2" / "a.txt", tmp_path / "scratch" / "session-1x"):
        request = path_permission("view", "read", str(elsewhere), scratch_ctx)
        assert request is not None
        assert request.action == "read" and request.outside_project
        assert request.target == str(elsewhere)


def test_dot_dot_out_of_the_scratch_dir_still_asks(scratch_ctx: ToolContext, tmp_path: Path) -> None:
    assert scratch_ctx.scratch_dir is not None
    escaping = f"{scratch_ctx.scratch_dir}/../../secret.txt"

    request = path_permission("view", "read", escaping, scratch_ctx)

    assert request is not None
    assert request.target == str(tmp_path / "secret.txt")


def test_symlink_in_the_scratch_dir_is_judged_by_its_target(scratch_ctx: ToolContext, tmp_path: Path) -> None:
    assert scratch_ctx.scratch_dir is not None
    scratch_ctx.scratch_dir.mkdir(parents=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("s")
    link = scratch_ctx.scratch_dir / "link.txt"
    link.symlink_to(secret)

    request = path_permission("view", "read", str(link), scratch_ctx)

    assert request is not None
    assert request.target == str(secret)


def test_write_inside_the_scratch_dir_follows_the_usual_rules(scratch_ctx: ToolContext) -> None:
    assert scratch_ctx.scratch_dir is not None
    target = scratch_ctx.scratch_dir / "notes.txt"

    request = path_permission("write", "write", str(target), scratch_ctx)

    assert request is not None
    assert request.action == "write" and request.outside_project
    assert request.grant_key == str(target.parent)


def test_without_a_scratch_dir_reads_outside_the_project_ask(tmp_path: Path) -> None:
    ctx = ToolContext(project_root=tmp_path / "project")

    assert not ctx.is_inside_scratch(tmp_path / "anything")
    assert path_permission("view", "read", str(tmp_path / "anything"), ctx) is not None


def test_is_inside_scratch_resolves_the_scratch_dir(tmp_path: Path) -> None:
    real = tmp_path / "real-scratch"
    real.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(real)
    ctx = ToolContext(project_root=tmp_path / "project", scratch_dir=alias)

    assert ctx.is_inside_scratch(real / "a.txt")
    assert ctx.is_inside_scratch(ctx.resolve(str(alias / "a.txt")))
    assert not ctx.is_inside_scratch(tmp_path / "a.txt")
