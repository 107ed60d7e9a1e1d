import os
import subprocess
from pathlib import Path

import pytest

from nestor.core.errors import ToolError
from nestor.permissions import PermissionPolicy
from nestor.tools._globbing import basename_prefilter, compile_glob
from nestor.tools._search import RipgrepLookup
from nestor.tools.base import ToolContext
from nestor.tools.catalogue import ToolCatalogue
from nestor.tools.glob import MAX_RESULTS, GlobParams, GlobTool
from tests.hostile_repos import ATTACKS, Attack, build

BACKENDS = {"ripgrep": RipgrepLookup.AUTO, "python": None}


@pytest.fixture(params=sorted(BACKENDS))
def tool(request: pytest.FixtureRequest) -> GlobTool:
    return GlobTool(rg_path=BACKENDS[request.param])


def make_files(root: Path, *names: str, start: int = 1_700_000_000) -> None:
    """Create files whose mtimes rise in the order given (the last is the newest)."""
    for offset, name in enumerate(names):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{name}\n")
        os.utime(path, (start + offset, start + offset))


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=T", *args], check=True
    )


async def glob(tool: GlobTool, ctx: ToolContext, pattern: str, path: str = ".") -> str:
    result = await tool.run(GlobParams(pattern=pattern, path=path), ctx)
    assert not result.is_error
    return result.content


def test_auto_detect_finds_the_ripgrep_binary() -> None:
    rg_path = GlobTool().rg_path

    assert rg_path is not None
    assert Path(rg_path).name == "rg"
    assert GlobTool(rg_path=None).rg_path is None


async def test_results_are_newest_first(tool: GlobTool, ctx: ToolContext) -> None:
    make_files(ctx.project_root, "old.py", "src/middle.py", "new.py", "notes.txt")

    assert (await glob(tool, ctx, "**/*.py")).splitlines() == ["new.py", "src/middle.py", "old.py"]


async def test_name_patterns_match_at_any_depth_and_slash_patterns_are_anchored(
    tool: GlobTool, ctx: ToolContext
) -> None:
    make_files(ctx.project_root, "a.py", "src/b.py", "src/deep/c.py", "lib/src/d.py")

    assert (await glob(tool, ctx, "*.py")).splitlines() == [
        "lib/src/d.py",
        "src/deep/c.py",
        "src/b.py",
        "a.py",
    ]
    assert (await glob(tool, ctx, "src/*.py")).splitlines() == ["src/b.py"]
    assert (await glob(tool, ctx, "src/**/*.py")).splitlines() == ["src/deep/c.py", "src/b.py"]


async def test_brace_alternatives(tool: GlobTool, ctx: ToolContext) -> None:
    make_files(ctx.project_root, "a.ts", "b.tsx", "c.js")

    assert (await glob(tool, ctx, "*.{ts,tsx}")).splitlines() == ["b.tsx", "a.ts"]


async def test_results_are_capped_with_a_note(tool: GlobTool, ctx: ToolContext) -> None:
    make_files(ctx.project_root, *(f"f{n:03}.txt" for n in range(MAX_RESULTS + 5)))

    result = await tool.run(GlobParams(pattern="*.txt"), ctx)

    lines = result.content.splitlines()
    assert lines[0] == "f104.txt"
    assert lines[MAX_RESULTS - 1] == "f005.txt"
    assert "Showing the 100 newest of 105 matching files" in result.content
    assert result.metadata["truncated"] is True
    assert result.metadata["count"] == MAX_RESULTS + 5


async def test_gitignore_and_dot_git_are_respected(tool: GlobTool, ctx: ToolContext) -> None:
    root = ctx.project_root
    git(root, "init", "-q")
    make_files(root, ".gitignore", "tracked.py", "build/gen.py", "scratch.py", ".hidden/h.py", "keep.py")
    (root / ".gitignore").write_text("build/\nscratch.py\nforced.py\n")
    make_files(root, "forced.py", start=1_600_000_000)
    git(root, "add", "tracked.py", ".gitignore")
    git(root, "add", "-f", "forced.py")
    git(root, "commit", "-q", "-m", "init")

    content = await glob(tool, ctx, "**/*")

    assert content.splitlines() == [".gitignore", "keep.py", ".hidden/h.py", "tracked.py"]


async def test_both_backends_give_the_same_answer(ctx: ToolContext) -> None:
    root = ctx.project_root
    git(root, "init", "-q")
    make_files(root, ".gitignore", "a.py", "pkg/b.py", "pkg/sub/c.py", "out/d.py", "e.md", ".github/ci.yml")
    (root / ".gitignore").write_text("out/\n")
    (root / "link.py").symlink_to(root / "a.py")

    for pattern in ["*.py", "pkg/**", "**/*.{py,yml}", "*"]:
        with_rg = await glob(GlobTool(), ctx, pattern)
        without = await glob(GlobTool(rg_path=None), ctx, pattern)
        assert with_rg == without, pattern


async def test_paths_are_relative_to_the_project_root_when_searching_a_subdirectory(
    tool: GlobTool, ctx: ToolContext
) -> None:
    make_files(ctx.project_root, "src/pkg/a.py", "other/b.py")

    assert await glob(tool, ctx, "*.py", path="src") == "src/pkg/a.py"


async def test_no_match_is_not_an_error(tool: GlobTool, ctx: ToolContext) -> None:
    make_files(ctx.project_root, "a.py")

    result = await tool.run(GlobParams(pattern="*.rs"), ctx)

    assert not result.is_error
    assert result.content == "No files found matching '*.rs' in the project root."


async def test_absolute_patterns_become_the_search_root(
    tool: GlobTool, ctx: ToolContext, tmp_path: Path
) -> None:
    make_files(ctx.project_root, "src/a.py", "src/sub/b.py", "c.py")

    assert await glob(tool, ctx, f"{ctx.project_root}/src/*.py") == "src/a.py"

    outside = tmp_path / "outside"
    make_files(outside, "x.py")
    assert await glob(tool, ctx, f"{outside}/*.py") == str(outside / "x.py")


async def test_bad_input_is_a_clear_error(tool: GlobTool, ctx: ToolContext) -> None:
    make_files(ctx.project_root, "a.py")

    with pytest.raises(ToolError, match=r"unclosed"):
        await glob(tool, ctx, "*.{py")
    with pytest.raises(ToolError, match=r"is a file"):
        await glob(tool, ctx, "*", path="a.py")
    with pytest.raises(ToolError, match=r"does not exist"):
        await glob(tool, ctx, "*", path="missing")


def test_permission_follows_the_search_root(ctx: ToolContext, tmp_path: Path) -> None:
    tool = GlobTool()

    inside = tool.permission(GlobParams(pattern="**/*.py"), ctx)
    assert inside is not None and not inside.outside_project
    for params in (GlobParams(pattern="*.py", path=str(tmp_path)), GlobParams(pattern=f"{tmp_path}/**/*.py")):
        request = tool.permission(params, ctx)
        assert request is not None
        assert request.action == "read"
        assert request.target == str(tmp_path)
        assert request.outside_project


def test_description_and_schema_are_model_ready() -> None:
    tool = GlobTool()

    assert tool.name == "glob"
    assert ToolCatalogue().has(tool.name, "read_only")
    assert "newest" in tool.description
    properties = tool.parameters_schema()["properties"]
    assert set(properties) == {"pattern", "path"}
    assert all(prop.get("description") for prop in properties.values())


async def test_an_ignored_directory_searched_explicitly_is_searched(tool: GlobTool, ctx: ToolContext) -> None:
    git(ctx.project_root, "init", "-q")
    make_files(ctx.project_root, ".gitignore", "vendor/lib/a.py", "vendor/b.py")
    (ctx.project_root / ".gitignore").write_text("vendor/\n")

    assert await glob(tool, ctx, "*.py") == "No files found matching '*.py' in the project root."
    assert (await glob(tool, ctx, "*.py", path="vendor")).splitlines() == ["vendor/b.py", "vendor/lib/a.py"]


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/deep/a.py", True),
        ("*.py", "a.pyc", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/sub/a.py", False),
        ("src/*.py", "lib/src/a.py", False),
        ("**/*.py", "a.py", True),
        ("src/**/t.py", "src/t.py", True),
        ("src/**/t.py", "src/a/b/t.py", True),
        ("src/**", "src/a/b.txt", True),
        ("*.{ts,tsx}", "web/app.tsx", True),
        ("*.{ts,tsx}", "web/app.js", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "a.txt", False),
        ("[!ab].txt", "c.txt", True),
        ("?.md", "docs/x.md", True),
        ("docs/", "docs/a/b.md", True),
        ("docs/", "site/docs/a.md", True),
        ("./src/*.py", "src/a.py", True),
        ("/top.py", "top.py", True),
        ("/top.py", "sub/top.py", False),
        ("a+b(c).py", "a+b(c).py", True),
        (r"\*.py", "*.py", True),
        (r"\*.py", "a.py", False),
    ],
)
def test_pattern_semantics(pattern: str, path: str, expected: bool) -> None:
    assert compile_glob(pattern).matches(path) is expected


@pytest.mark.parametrize(
    ("pattern", "prefilter"),
    [
        ("**/*.py", "*.py"),
        ("src/*.{ts,tsx}", "*.{ts,tsx}"),
        ("src/**", None),
        ("{a/b,c}.py", None),
        ("docs/", None),
    ],
)
def test_ripgrep_prefilter_is_only_the_file_name_part(pattern: str, prefilter: str | None) -> None:
    assert basename_prefilter(compile_glob(pattern)) == prefilter


async def test_files_a_rule_withholds_are_left_out_of_the_results(tool: GlobTool, ctx: ToolContext) -> None:
    make_files(ctx.project_root, "app.py", ".env", "secrets/key.py", "secrets/deep/more.py")
    policy = PermissionPolicy.from_config(
        [], [], ["view(.env)", "Read(secrets/**)"], project_root=str(ctx.project_root)
    )
    ctx.withholds = policy.withholds

    content = await glob(tool, ctx, "**/*")

    lines = content.splitlines()
    assert "app.py" in lines
    assert not [line for line in lines if ".env" in line or "secrets" in line]
    assert "(3 files left out by the permission rules.)" in lines


@pytest.mark.parametrize("attack", ATTACKS.values(), ids=ATTACKS.keys())
async def test_the_fallback_in_a_hostile_repository_runs_none_of_its_commands(
    tmp_path: Path, attack: Attack
) -> None:
    directory, marker = build(attack, tmp_path)

    found = await glob(GlobTool(rg_path=None), ToolContext(project_root=directory), "*.txt")

    assert not marker.exists(), marker.read_text()
    assert "a.txt" in found or "b.txt" in found
