from pathlib import Path

import pytest

from nestor.core.errors import ToolError
from nestor.permissions import PermissionPolicy
from nestor.tools.base import ToolContext
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.edit import EditParams, EditTool


async def edit(ctx: ToolContext, path: str, old: str, new: str, replace_all: bool = False) -> str:
    params = EditParams(path=path, old_string=old, new_string=new, replace_all=replace_all)
    result = await EditTool().run(params, ctx)
    assert not result.is_error
    return result.content


async def test_replaces_a_unique_string_and_shows_a_diff(ctx: ToolContext) -> None:
    target = ctx.project_root / "app.py"
    target.write_text("def main():\n    return 1\n")

    content = await edit(ctx, "app.py", "    return 1", "    return 2")

    assert target.read_text() == "def main():\n    return 2\n"
    assert content.startswith("Edited app.py: 1 replacement.")
    assert "-    return 1\n+    return 2" in content


async def test_not_found_says_so_and_hints_at_whitespace(ctx: ToolContext) -> None:
    target = ctx.project_root / "app.py"
    target.write_text("def main():\n    return 1\n")

    with pytest.raises(ToolError, match=r"not found in app.py.*whitespace is ignored.*indentation"):
        await edit(ctx, "app.py", "def main():\n  return 1", "x")
    with pytest.raises(ToolError, match=r"not found in app.py.*exactly"):
        await edit(ctx, "app.py", "return 3", "x")
    assert target.read_text() == "def main():\n    return 1\n"


async def test_more_than_one_occurrence_needs_context_or_replace_all(ctx: ToolContext) -> None:
    target = ctx.project_root / "a.txt"
    target.write_text("x = 1\nx = 1\nx = 1\n")

    with pytest.raises(ToolError, match=r"occurs 3 times.*replace_all"):
        await edit(ctx, "a.txt", "x = 1", "x = 2")
    assert target.read_text() == "x = 1\nx = 1\nx = 1\n"

    content = await edit(ctx, "a.txt", "x = 1", "x = 2", replace_all=True)

    assert target.read_text() == "x = 2\nx = 2\nx = 2\n"
    assert content.startswith("Edited a.txt: 3 replacements.")


async def test_crlf_line_endings_are_kept(ctx: ToolContext) -> None:
    target = ctx.project_root / "win.txt"
    target.write_bytes(b"one\r\ntwo\r\nthree\r\n")

    await edit(ctx, "win.txt", "one\ntwo", "uno\ndos\nextra")

    assert target.read_bytes() == b"uno\r\ndos\r\nextra\r\nthree\r\n"


async def test_mixed_line_endings_are_left_alone_outside_the_edit(ctx: ToolContext) -> None:
    target = ctx.project_root / "mixed.txt"
    target.write_bytes(b"a\r\nb\nc\r\n")

    await edit(ctx, "mixed.txt", "b", "B")

    assert target.read_bytes() == b"a\r\nB\nc\r\n"


async def test_a_byte_order_mark_is_kept(ctx: ToolContext) -> None:
    target = ctx.project_root / "bom.txt"
    target.write_bytes(b"\xef\xbb\xbfhello\n")

    await edit(ctx, "bom.txt", "hello", "bye")

    assert target.read_bytes() == b"\xef\xbb\xbfbye\n"


async def test_a_missing_file_points_to_write(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"does not exist.*write tool"):
        await edit(ctx, "nope.py", "a", "b")


async def test_empty_old_string_creates_a_missing_file(ctx: ToolContext) -> None:
    content = await edit(ctx, "new/dir/file.txt", "", "fresh\n")

    assert (ctx.project_root / "new" / "dir" / "file.txt").read_text() == "fresh\n"
    assert content == "Created new/dir/file.txt (6 bytes)."


async def test_empty_old_string_on_an_existing_file_is_an_error(ctx: ToolContext) -> None:
    (ctx.project_root / "a.txt").write_text("data\n")

    with pytest.raises(ToolError, match=r"old_string is empty.*already exists"):
        await edit(ctx, "a.txt", "", "more")


async def test_identical_strings_are_an_error(ctx: ToolContext) -> None:
    (ctx.project_root / "a.txt").write_text("data\n")

    with pytest.raises(ToolError, match=r"identical"):
        await edit(ctx, "a.txt", "data", "data")


async def test_binary_files_are_refused(ctx: ToolContext) -> None:
    (ctx.project_root / "a.bin").write_bytes(b"\x00data")

    with pytest.raises(ToolError, match=r"binary"):
        await edit(ctx, "a.bin", "data", "x")


async def test_long_diffs_are_shortened_in_the_result_but_kept_in_metadata(ctx: ToolContext) -> None:
    target = ctx.project_root / "a.txt"
    target.write_text("start\n")
    params = EditParams(path="a.txt", old_string="start\n", new_string="".join(f"l{n}\n" for n in range(100)))

    result = await EditTool().run(params, ctx)

    assert "more diff lines" in result.content
    assert "+l99" not in result.content
    assert "+l99" in result.metadata["diff"]


def test_every_edit_needs_permission(ctx: ToolContext, tmp_path: Path) -> None:
    tool = EditTool()

    inside = tool.permission(EditParams(path="a.txt", old_string="a", new_string="b"), ctx)
    outside = tool.permission(EditParams(path=str(tmp_path / "b.txt"), old_string="a", new_string="b"), ctx)

    assert inside is not None
    assert inside.action == "write"
    assert not inside.outside_project
    assert outside is not None
    assert outside.outside_project


def test_description_and_schema_are_model_ready() -> None:
    tool = EditTool()

    assert tool.name == "edit"
    assert not ToolCatalogue().has(tool.name, "read_only")
    assert "old_string" in tool.description
    properties = tool.parameters_schema()["properties"]
    assert set(properties) == {"path", "old_string", "new_string", "replace_all"}
    assert all(prop.get("description") for prop in properties.values())


def test_a_rule_on_write_governs_edit_and_the_reverse(ctx: ToolContext) -> None:
    root = str(ctx.project_root)
    request = EditTool().permission(EditParams(path="src/a.py", old_string="a", new_string="b"), ctx)
    assert request is not None
    assert (
        PermissionPolicy.from_config([], [], ["write(src/**)"], project_root=root).decide(request).kind
        == "deny"
    )
    assert PermissionPolicy.from_config(["Write"], [], [], project_root=root).decide(request).kind == "allow"


def test_edit_star_txt_covers_project_files_only(ctx: ToolContext, tmp_path: Path) -> None:
    policy = PermissionPolicy.from_config(["edit(*.txt)"], [], [], project_root=str(ctx.project_root))
    outside = tmp_path / "x.txt"
    outside.write_text("a")
    (ctx.project_root / "link.txt").symlink_to(outside)
    for path in ("notes.txt", str(outside), "link.txt"):
        request = EditTool().permission(EditParams(path=path, old_string="a", new_string="b"), ctx)
        assert request is not None
        assert policy.decide(request).kind == ("allow" if path == "notes.txt" else "ask"), path
