from pathlib import Path

import pytest

from nestor.core.errors import ToolError
from nestor.permissions import PermissionPolicy
from nestor.tools.base import ToolContext
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.view import MAX_OUTPUT_CHARS, ViewParams, ViewTool


async def view(ctx: ToolContext, path: str, offset: int = 0, limit: int = 2000) -> str:
    result = await ViewTool().run(ViewParams(path=path, offset=offset, limit=limit), ctx)
    assert not result.is_error
    return result.content


async def test_lines_are_numbered_like_cat_n(ctx: ToolContext) -> None:
    (ctx.project_root / "a.txt").write_text("one\n  two\nthree\n")

    content = await view(ctx, "a.txt")

    assert content == "     1\tone\n     2\t  two\n     3\tthree"


async def test_offset_and_limit_select_a_window_with_a_footer(ctx: ToolContext) -> None:
    (ctx.project_root / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))

    content = await view(ctx, "a.txt", offset=3, limit=2)

    rows, footer = content.split("\n\n")
    assert rows == "     4\tline 4\n     5\tline 5"
    assert "lines 4-5 of 10" in footer
    assert "offset=5" in footer


async def test_last_window_has_no_footer(ctx: ToolContext) -> None:
    (ctx.project_root / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))

    content = await view(ctx, "a.txt", offset=8)

    assert content == "     9\tline 9\n    10\tline 10"


async def test_offset_past_the_end_is_an_error(ctx: ToolContext) -> None:
    (ctx.project_root / "a.txt").write_text("a\nb\n")

    with pytest.raises(ToolError, match=r"past the end.*2 lines"):
        await view(ctx, "a.txt", offset=2)


async def test_empty_file_says_so(ctx: ToolContext) -> None:
    (ctx.project_root / "empty.txt").write_text("")

    assert await view(ctx, "empty.txt") == "(empty.txt is empty.)"


async def test_long_lines_are_truncated_with_a_marker(ctx: ToolContext) -> None:
    (ctx.project_root / "long.txt").write_text("x" * 2500 + "\nshort\n")

    first, second = (await view(ctx, "long.txt")).split("\n")

    assert first.startswith("     1\t" + "x" * 2000)
    assert "x" * 2001 not in first
    assert "line truncated: 2500 characters" in first
    assert second == "     2\tshort"


async def test_output_is_capped_and_the_footer_says_where_to_go_on(ctx: ToolContext) -> None:
    (ctx.project_root / "wide.txt").write_text(("y" * 1500 + "\n") * 1000)

    content = await view(ctx, "wide.txt")

    rows, footer = content.split("\n\n")
    last_shown = int(rows.split("\n")[-1].split("\t")[0])
    assert len(content) < MAX_OUTPUT_CHARS + 500
    assert 0 < last_shown < 1000
    assert f"lines 1-{last_shown} of 1000" in footer
    assert f"offset={last_shown}" in footer


async def test_crlf_and_bom_do_not_leak_into_the_output(ctx: ToolContext) -> None:
    (ctx.project_root / "win.txt").write_bytes(b"\xef\xbb\xbfalpha\r\nbeta\r\n")

    assert await view(ctx, "win.txt") == "     1\talpha\n     2\tbeta"


async def test_absolute_paths_work(ctx: ToolContext) -> None:
    target = ctx.project_root / "sub" / "a.txt"
    target.parent.mkdir()
    target.write_text("hello\n")

    assert await view(ctx, str(target)) == "     1\thello"


async def test_files_over_5_mb_are_refused(ctx: ToolContext) -> None:
    (ctx.project_root / "big.txt").write_bytes(b"a" * (5 * 1024 * 1024 + 1))

    with pytest.raises(ToolError, match=r"over the 5 MB limit.*grep"):
        await view(ctx, "big.txt")


async def test_binary_files_are_refused(ctx: ToolContext) -> None:
    (ctx.project_root / "blob.bin").write_bytes(b"abc\x00def")

    with pytest.raises(ToolError, match=r"blob.bin is a binary file"):
        await view(ctx, "blob.bin")


async def test_images_are_named_as_images(ctx: ToolContext) -> None:
    (ctx.project_root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32)

    with pytest.raises(ToolError, match=r"logo.png is a PNG image"):
        await view(ctx, "logo.png")


async def test_undecodable_files_are_refused(ctx: ToolContext) -> None:
    (ctx.project_root / "latin.txt").write_bytes("café\n".encode("latin-1"))

    with pytest.raises(ToolError, match=r"not valid UTF-8"):
        await view(ctx, "latin.txt")


async def test_missing_file_suggests_similar_names(ctx: ToolContext) -> None:
    (ctx.project_root / "config.yaml").write_text("a: 1\n")

    with pytest.raises(ToolError, match=r"config.yml does not exist. Did you mean: .*config\.yaml"):
        await view(ctx, "config.yml")


async def test_missing_file_without_lookalikes(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"nothing.txt does not exist; check the path"):
        await view(ctx, "nothing.txt")


async def test_a_directory_is_listed_as_ls_lists_it(ctx: ToolContext) -> None:
    (ctx.project_root / "src").mkdir()
    (ctx.project_root / "src" / "main.py").write_text("print(1)\n")

    result = await ViewTool().run(ViewParams(path="src"), ctx)

    assert result.content.startswith("(src is a directory; it is listed here as the ls tool lists it.)\n")
    assert "main.py" in result.content and result.metadata["directory"] is True


def test_permission_inside_the_project_is_a_read_the_rules_judge(ctx: ToolContext) -> None:
    policy = PermissionPolicy.from_config([], [], ["view(.env)"], project_root=str(ctx.project_root))
    allowed = ViewTool().permission(ViewParams(path="a.txt"), ctx)
    denied = ViewTool().permission(ViewParams(path=".env"), ctx)
    assert allowed is not None and not allowed.outside_project
    assert policy.decide(allowed).kind == "allow"
    assert denied is not None and policy.decide(denied).kind == "deny"


def test_a_read_rule_denies_view_inside_the_project(ctx: ToolContext) -> None:
    policy = PermissionPolicy.from_config([], [], ["Read(secrets/**)"], project_root=str(ctx.project_root))
    request = ViewTool().permission(ViewParams(path="secrets/key.pem"), ctx)
    assert request is not None and policy.decide(request).kind == "deny"


def test_permission_outside_the_project_is_a_read_request(ctx: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.txt"

    request = ViewTool().permission(ViewParams(path=str(outside)), ctx)

    assert request is not None
    assert request.action == "read"
    assert request.outside_project
    assert request.target == str(outside)


def test_description_and_schema_are_model_ready() -> None:
    tool = ViewTool()

    assert tool.name == "view"
    assert ToolCatalogue().has(tool.name, "read_only")
    assert "offset" in tool.description
    properties = tool.parameters_schema()["properties"]
    assert set(properties) == {"path", "offset", "limit"}
    assert all(prop.get("description") for prop in properties.values())
