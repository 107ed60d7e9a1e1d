from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from nestor.agents.file_limits import AgentFileLimits, LimitTally
from nestor.agents.locations import AgentLocation, Layout, list_agent_files


def _touch(path: Path, text: str = "---\ndescription: d\n---\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _listed(location: AgentLocation, tally: LimitTally | None = None) -> list[tuple[str, str]]:
    return [
        (str(path.relative_to(location.directory)), name) for path, name in list_agent_files(location, tally)
    ]


def test_a_tree_lists_a_folders_files_then_its_subfolders_each_in_name_order(tmp_path: Path) -> None:
    root = tmp_path / "agents"
    for relative in ("b.md", "a.md", "z/c.md", "m/n/d.md", "m/e.md", ".hidden/x.md", "m/.x.md", "notes.txt"):
        _touch(root / relative)
    location = AgentLocation("opencode", "project", root, "tree")
    assert _listed(location) == [
        ("a.md", "a"),
        ("b.md", "b"),
        ("m/e.md", "e"),
        ("m/n/d.md", "d"),
        ("z/c.md", "c"),
    ]


def nest(root: Path, depth: int, file_name: str, text: str) -> None:
    """``root/a/a/.../file_name``, ``depth`` folders deep (made one level at a time: the whole path is
    longer than one system call takes)."""
    root.mkdir(parents=True, exist_ok=True)
    folder = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("a", dir_fd=folder)
            inner = os.open("a", os.O_RDONLY, dir_fd=folder)
            os.close(folder)
            folder = inner
        file = os.open(file_name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=folder)
        os.write(file, text.encode())
        os.close(file)
    finally:
        os.close(folder)


def unnest(root: Path) -> None:
    """Remove what :func:`nest` made, a level at a time (``shutil.rmtree`` recurses, and would fail)."""
    top = root / "a"
    while (top / "a").is_dir():
        (top / "a").rename(root / "next")
        shutil.rmtree(top)
        (root / "next").rename(top)
    shutil.rmtree(top)


def test_a_tree_nested_1200_folders_deep_is_listed_without_recursion(tmp_path: Path) -> None:
    root = tmp_path / "agents"
    nest(root, 1200, "deep.md", "---\ndescription: d\n---\n")
    try:
        location = AgentLocation("opencode", "project", root, "tree")
        [(path, name)] = list(list_agent_files(location))
        assert name == "deep"
        assert len(path.relative_to(root).parts) == 1201
    finally:
        unnest(root)


def test_a_tree_does_not_follow_links_to_folders(tmp_path: Path) -> None:
    root = tmp_path / "agents"
    _touch(root / "real" / "a.md")
    (root / "loop").symlink_to(root, target_is_directory=True)
    location = AgentLocation("opencode", "project", root, "tree")
    assert _listed(location) == [("real/a.md", "a")]


def test_flat_and_folders_layouts(tmp_path: Path) -> None:
    flat = tmp_path / "flat"
    for name in ("b.json", "a.json", "c.md", ".d.json"):
        _touch(flat / name)
    (flat / "dir.json").mkdir()
    assert _listed(AgentLocation("mini-cc", "project", flat)) == [("a.json", "a"), ("b.json", "b")]
    folders = tmp_path / "folders"
    _touch(folders / "two" / "AGENTS.md")
    _touch(folders / "one" / "AGENTS.md")
    (folders / "empty").mkdir()
    assert _listed(AgentLocation("deepagents", "project", folders, "folders")) == [
        ("one/AGENTS.md", "one"),
        ("two/AGENTS.md", "two"),
    ]
    assert _listed(AgentLocation("claude", "project", tmp_path / "missing")) == []


def test_listing_stops_when_the_directory_entries_run_out(tmp_path: Path) -> None:
    root = tmp_path / "agents"
    for index in range(30):
        _touch(root / f"a{index:02}.md")
    tally = LimitTally(AgentFileLimits(entries=10))
    listed = _listed(AgentLocation("claude", "project", root), tally)
    assert len(listed) == 9  # opening the directory, then its first nine entries, in name order
    assert [name for _path, name in listed] == sorted(name for _path, name in listed)
    assert not tally.listing and tally.reading
    problem = tally.problem()
    assert problem is not None and problem.path == root and problem.severity == "warning"
    assert "10 directory entries" in problem.message


@pytest.mark.parametrize(
    ("layout", "last", "entries"),
    [
        ("tree", "late.md", 15),  # the root and its first 14 entries: "zz" is never opened
        ("folders", "AGENTS.md", 30),  # the root, its 21 entries, 8 looks for an AGENTS.md
    ],
)
def test_every_folder_opened_or_looked_into_counts_as_an_entry(
    tmp_path: Path, layout: Layout, last: str, entries: int
) -> None:
    root = tmp_path / "agents"
    for index in range(20):
        (root / f"empty{index:02}").mkdir(parents=True)
    _touch(root / "zz" / last)
    tally = LimitTally(AgentFileLimits(entries=entries))
    assert _listed(AgentLocation("opencode", "project", root, layout), tally) == []
    assert tally.entries == entries and not tally.listing
