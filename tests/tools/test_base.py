"""path_permission and ToolContext: which reads and writes need a permission request, and on which path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from nestor.core.errors import ToolError
from nestor.tools.base import Tool, ToolContext, path_permission
from nestor.tools.edit import EditParams, EditTool
from nestor.tools.view import ViewParams, ViewTool
from nestor.tools.write import WriteParams, WriteTool


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


def _swap_in_link(path: Path, target: Path) -> None:
    """What a sandboxed command does between a call's permission and its run: ``path`` becomes a link."""
    path.rename(path.with_name(path.name + ".aside"))
    path.symlink_to(target)


FILE_CALLS = [
    (WriteTool(), WriteParams(path="src/x.txt", content="written\n")),
    (EditTool(), EditParams(path="src/x.txt", old_string="old", new_string="written")),
    (ViewTool(), ViewParams(path="src/x.txt")),
]


@pytest.mark.parametrize("swapped", ["src", "src/x.txt"])
@pytest.mark.parametrize(("tool", "params"), FILE_CALLS, ids=["write", "edit", "view"])
async def test_a_link_swapped_in_after_the_permission_fails_the_call(
    scratch_ctx: ToolContext, tmp_path: Path, tool: Tool[Any], params: BaseModel, swapped: str
) -> None:
    # The file tools run in nestor's own process: a command in the sandbox must not redirect them
    # between the permission (which judged src/x.txt, inside the project) and the open.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("old outside\n")
    (scratch_ctx.project_root / "src").mkdir()
    (scratch_ctx.project_root / "src" / "x.txt").write_text("old\n")
    request = tool.permission(params, scratch_ctx)
    assert request is not None and not request.outside_project

    link_to = outside if swapped == "src" else outside / "x.txt"
    _swap_in_link(scratch_ctx.project_root / swapped, link_to)

    with pytest.raises(ToolError, match=f"{swapped} became a symbolic link after the path was checked"):
        await tool.run(params, scratch_ctx)
    assert sorted(path.name for path in outside.iterdir()) == ["x.txt"]
    assert (outside / "x.txt").read_text() == "old outside\n"


async def test_a_link_inside_the_project_is_written_where_it_leads(scratch_ctx: ToolContext) -> None:
    # Links a project holds keep working: the permission judges the real path, which is then opened.
    root = scratch_ctx.project_root
    (root / "lib").mkdir()
    (root / "src").symlink_to("lib")
    (root / "lib" / "old.txt").write_text("old\n")
    (root / "notes.txt").symlink_to("lib/old.txt")

    await WriteTool().run(WriteParams(path="src/new/x.txt", content="new\n"), scratch_ctx)
    await EditTool().run(EditParams(path="notes.txt", old_string="old", new_string="edited"), scratch_ctx)

    assert (root / "lib" / "new" / "x.txt").read_text() == "new\n"
    assert (root / "lib" / "old.txt").read_text() == "edited\n"
    assert (root / "notes.txt").is_symlink()
