from pathlib import Path

import pytest

from nestor.core.errors import ToolError
from nestor.permissions import PermissionPolicy
from nestor.tools.base import ToolContext
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.write import WriteParams, WriteTool


async def test_creates_the_file_and_missing_directories(ctx: ToolContext) -> None:
    result = await WriteTool().run(WriteParams(path="src/pkg/new.py", content="a = 1\nb = 'é'\n"), ctx)

    target = ctx.project_root / "src" / "pkg" / "new.py"
    assert target.read_bytes() == "a = 1\nb = 'é'\n".encode()
    assert result.content == "Created src/pkg/new.py (15 bytes, 2 lines)."
    assert result.metadata["created"] is True


async def test_overwrites_and_reports_a_diff(ctx: ToolContext) -> None:
    target = ctx.project_root / "a.txt"
    target.write_text("old\n")

    result = await WriteTool().run(WriteParams(path="a.txt", content="new\nlast"), ctx)

    assert target.read_text() == "new\nlast"
    assert result.content == "Overwrote a.txt (8 bytes, 2 lines)."
    assert result.metadata["created"] is False
    assert "-old" in result.metadata["diff"]
    assert "+new" in result.metadata["diff"]


async def test_content_is_written_exactly_including_crlf(ctx: ToolContext) -> None:
    await WriteTool().run(WriteParams(path="win.txt", content="a\r\nb\r\n"), ctx)

    assert (ctx.project_root / "win.txt").read_bytes() == b"a\r\nb\r\n"


async def test_identical_content_is_not_rewritten(ctx: ToolContext) -> None:
    target = ctx.project_root / "a.txt"
    target.write_text("same\n")

    result = await WriteTool().run(WriteParams(path="a.txt", content="same\n"), ctx)

    assert result.content == "a.txt already has this content; nothing written."


async def test_a_directory_is_an_error(ctx: ToolContext) -> None:
    (ctx.project_root / "src").mkdir()

    with pytest.raises(ToolError, match=r"is a directory"):
        await WriteTool().run(WriteParams(path="src", content="x"), ctx)


async def test_a_file_in_the_way_of_the_directories_is_an_error(ctx: ToolContext) -> None:
    (ctx.project_root / "blocker").write_text("x")

    with pytest.raises(ToolError, match=r"is a file, not a directory"):
        await WriteTool().run(WriteParams(path="blocker/a.txt", content="x"), ctx)


def test_every_write_needs_permission(ctx: ToolContext, tmp_path: Path) -> None:
    tool = WriteTool()

    inside = tool.permission(WriteParams(path="a.txt", content=""), ctx)
    outside = tool.permission(WriteParams(path=str(tmp_path / "b.txt"), content=""), ctx)

    assert inside is not None
    assert inside.action == "write"
    assert inside.target == str(ctx.project_root / "a.txt")
    assert not inside.outside_project
    assert outside is not None
    assert outside.action == "write"
    assert outside.outside_project


def test_description_and_schema_are_model_ready() -> None:
    tool = WriteTool()

    assert tool.name == "write"
    assert not ToolCatalogue().has(tool.name, "read_only")
    assert "edit" in tool.description
    properties = tool.parameters_schema()["properties"]
    assert set(properties) == {"path", "content"}
    assert all(prop.get("description") for prop in properties.values())


def test_a_bare_write_rule_does_not_reach_outside_the_project(ctx: ToolContext, tmp_path: Path) -> None:
    policy = PermissionPolicy.from_config(["write"], [], [], project_root=str(ctx.project_root))
    inside = WriteTool().permission(WriteParams(path="a.txt", content="x"), ctx)
    bashrc = WriteTool().permission(WriteParams(path=str(tmp_path / ".bashrc"), content="x"), ctx)
    assert inside is not None and policy.decide(inside).kind == "allow"
    assert bashrc is not None and policy.decide(bashrc).kind == "ask"
