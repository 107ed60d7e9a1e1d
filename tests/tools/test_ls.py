import os
import subprocess
from pathlib import Path

import pytest

from nestor.core.errors import ToolError
from nestor.tools.base import ToolContext
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.ls import MAX_ENTRIES, LsParams, LsTool
from tests.hostile_repos import ATTACKS, Attack, build


def make_files(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{name}\n")


def git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)


async def ls(ctx: ToolContext, path: str = ".", ignore: list[str] | None = None) -> str:
    result = await LsTool().run(LsParams(path=path, ignore=ignore or []), ctx)
    assert not result.is_error
    return result.content


async def test_lists_an_indented_tree_directories_first(ctx: ToolContext) -> None:
    make_files(ctx.project_root, "b.txt", "A.md", "src/main.py", "src/pkg/mod.py", "docs/guide.md")

    content = await ls(ctx)

    assert content.splitlines() == [
        f"{ctx.project_root}/",
        "  docs/",
        "    guide.md",
        "  src/",
        "    pkg/",
        "      mod.py",
        "    main.py",
        "  A.md",
        "  b.txt",
    ]


async def test_skips_noise_directories(ctx: ToolContext) -> None:
    make_files(
        ctx.project_root,
        "keep.py",
        ".git/HEAD",
        "node_modules/lib/index.js",
        "pkg/__pycache__/mod.cpython-311.pyc",
        ".venv/bin/python",
    )

    content = await ls(ctx)

    assert content.splitlines() == [f"{ctx.project_root}/", "  pkg/", "  keep.py"]


async def test_respects_gitignore_inside_a_git_repository(ctx: ToolContext) -> None:
    git_init(ctx.project_root)
    make_files(ctx.project_root, ".gitignore", "build/out.o", "debug.log", "src/app.py", "src/tmp.log")
    (ctx.project_root / ".gitignore").write_text("build/\n*.log\n")

    content = await ls(ctx)

    assert content.splitlines() == [f"{ctx.project_root}/", "  src/", "    app.py", "  .gitignore"]


async def test_gitignore_is_not_applied_outside_a_git_repository(ctx: ToolContext) -> None:
    make_files(ctx.project_root, ".gitignore", "debug.log")
    (ctx.project_root / ".gitignore").write_text("*.log\n")

    assert "debug.log" in await ls(ctx)


@pytest.mark.parametrize("in_git", [False, True])
async def test_ignore_patterns_leave_entries_out(ctx: ToolContext, in_git: bool) -> None:
    if in_git:
        git_init(ctx.project_root)
    make_files(ctx.project_root, "a.py", "notes.log", "sub/b.log", "sub/c.py", "dist/x.js")

    content = await ls(ctx, ignore=["*.log", "dist/"])

    assert content.splitlines() == [f"{ctx.project_root}/", "  sub/", "    c.py", "  a.py"]


async def test_lists_a_subdirectory(ctx: ToolContext) -> None:
    make_files(ctx.project_root, "top.txt", "src/a.py")

    content = await ls(ctx, "src")

    assert content.splitlines() == [f"{ctx.project_root / 'src'}/", "  a.py"]


async def test_empty_directory(ctx: ToolContext) -> None:
    assert await ls(ctx) == f"{ctx.project_root}/\n  (empty)"


@pytest.mark.parametrize("in_git", [False, True])
async def test_cap_keeps_the_shallowest_entries_and_says_so(ctx: ToolContext, in_git: bool) -> None:
    if in_git:
        git_init(ctx.project_root)
    make_files(ctx.project_root, *(f"deep/file{n:04}.txt" for n in range(MAX_ENTRIES + 5)), "top.txt")

    result = await LsTool().run(LsParams(), ctx)

    lines = result.content.splitlines()
    assert "  top.txt" in lines
    assert "  deep/" in lines
    assert result.metadata == {"path": str(ctx.project_root), "entries": MAX_ENTRIES, "truncated": True}
    assert "Listing cut at 1000 entries" in result.content


async def test_a_file_path_is_an_error(ctx: ToolContext) -> None:
    make_files(ctx.project_root, "a.py")

    with pytest.raises(ToolError, match=r"is a file.*view"):
        await ls(ctx, "a.py")


async def test_a_missing_directory_is_an_error(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"does not exist"):
        await ls(ctx, "nowhere")


def test_permission_is_a_read_marked_outside_the_project_when_it_is(ctx: ToolContext, tmp_path: Path) -> None:
    tool = LsTool()

    inside = tool.permission(LsParams(), ctx)
    assert inside is not None and not inside.outside_project
    request = tool.permission(LsParams(path=str(tmp_path)), ctx)
    assert request is not None
    assert request.action == "read"
    assert request.outside_project


def test_description_and_schema_are_model_ready() -> None:
    tool = LsTool()

    assert tool.name == "ls"
    assert ToolCatalogue().has(tool.name, "read_only")
    assert ".gitignore" in tool.description
    properties = tool.parameters_schema()["properties"]
    assert set(properties) == {"path", "ignore"}
    assert all(prop.get("description") for prop in properties.values())


async def test_an_ignored_directory_listed_explicitly_shows_its_content(ctx: ToolContext) -> None:
    git_init(ctx.project_root)
    make_files(ctx.project_root, ".gitignore", "build/out.o", "build/lib/x.so")
    (ctx.project_root / ".gitignore").write_text("build/\n")

    content = await ls(ctx, "build")

    assert content.splitlines() == [f"{ctx.project_root / 'build'}/", "  lib/", "    x.so", "  out.o"]


@pytest.mark.parametrize("attack", ATTACKS.values(), ids=ATTACKS.keys())
async def test_listing_a_hostile_repository_runs_none_of_its_commands(tmp_path: Path, attack: Attack) -> None:
    # Case 1 of the second red team: `ls .` ran the repository's core.fsmonitor, unsandboxed.
    directory, marker = build(attack, tmp_path)

    content = await ls(ToolContext(project_root=directory))

    assert not marker.exists(), marker.read_text()
    assert "a.txt" in content or "b.txt" in content


@pytest.mark.parametrize("in_git", [True, False], ids=["git work tree", "plain folder"])
async def test_a_fifo_is_listed_marked_and_gitignore_still_applies(ctx: ToolContext, in_git: bool) -> None:
    if in_git:
        git_init(ctx.project_root)
        make_files(ctx.project_root, ".gitignore")
        (ctx.project_root / ".gitignore").write_text("ignored.pipe\n")
    make_files(ctx.project_root, "a.txt", "src/main.py")
    for name in ("events", "src/feed", "ignored.pipe"):
        os.mkfifo(ctx.project_root / name)

    lines = (await ls(ctx)).splitlines()

    marked = "  (a FIFO (named pipe), not a regular file: view cannot read it)"
    assert f"  events{marked}" in lines and f"    feed{marked}" in lines
    assert lines.index(f"    feed{marked}") == lines.index("  src/") + 1
    assert any(line.startswith("  ignored.pipe") for line in lines) is not in_git
