"""A deny or ask rule covers every name of the files it covers: a hard link is the same file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nestor.core.permission import PermissionRequest
from nestor.permissions import PermissionPolicy, hard_links, parse_rule
from nestor.tools.base import ToolContext
from nestor.tools.glob import GlobParams, GlobTool
from nestor.tools.grep import GrepParams, GrepTool
from nestor.tools.view import ViewParams, ViewTool


def read(path: Path) -> PermissionRequest:
    return PermissionRequest("view", "read", str(path), f"Read {path}", target_is_real=True)


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "key.txt").write_text("private")
    return root


def decide(root: Path, request: PermissionRequest, *, deny: tuple[str, ...] = ("Read(secrets/**)",)) -> str:
    return PermissionPolicy.from_config([], [], deny, project_root=str(root)).decide(request).kind


def test_a_hard_link_of_a_denied_file_is_denied(tmp_path: Path) -> None:
    root = project(tmp_path)
    os.link(root / "secrets" / "key.txt", root / "k")
    (root / "other.txt").write_text("public")
    assert decide(root, read(root / "k")) == "deny"
    assert decide(root, read(root / "other.txt")) == "allow"


@pytest.mark.parametrize(
    "rule", ["Read(secrets/key.txt)", "view(secrets/)", "Read(**/*.txt)", "view(secrets/*)"]
)
def test_every_pattern_shape_covers_the_links(tmp_path: Path, rule: str) -> None:
    root = project(tmp_path)
    os.link(root / "secrets" / "key.txt", root / "k.bin")
    assert decide(root, read(root / "k.bin"), deny=(rule,)) == "deny"


def test_an_ask_rule_and_a_write_rule_cover_the_links_too(tmp_path: Path) -> None:
    root = project(tmp_path)
    os.link(root / "secrets" / "key.txt", root / "k")
    policy = PermissionPolicy.from_config([], ["view(secrets/**)"], [], project_root=str(root))
    assert policy.decide(read(root / "k")).kind == "ask"
    write = PermissionRequest("edit", "write", str(root / "k"), "Edit k", target_is_real=True)
    assert decide(root, write, deny=("Edit(secrets/**)",)) == "deny"


def test_a_link_made_after_the_first_judgement_is_seen(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "a").write_text("a")
    os.link(root / "a", root / "b")  # a file with two names, neither denied: the tree is walked
    assert decide(root, read(root / "b")) == "allow"
    (root / "secrets" / "new.txt").write_text("new secret")
    os.link(root / "secrets" / "new.txt", root / "n")
    assert decide(root, read(root / "n")) == "deny"


def test_a_file_replaced_in_the_denied_tree_is_seen(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "x").write_text("x")
    os.link(root / "x", root / "y")
    assert decide(root, read(root / "y")) == "allow"
    os.replace(root / "x", root / "secrets" / "key.txt")  # y's file now has a denied name
    assert decide(root, read(root / "y")) == "deny"


def test_a_file_with_one_name_is_judged_without_a_walk(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "plain.txt").write_text("x")
    assert decide(root, read(root / "plain.txt"), deny=("Read(never-walked/**)",)) == "allow"
    walked = {key[:2] for key in hard_links._INDEXES}  # pyright: ignore[reportPrivateUsage]
    assert ("never-walked/**", str(root)) not in walked


def test_a_tree_too_large_to_walk_covers_every_linked_file(tmp_path: Path) -> None:
    root = project(tmp_path)
    for index in range(5):
        (root / "secrets" / f"{index}.txt").write_text("")
    (root / "a").write_text("a")
    os.link(root / "a", root / "b")
    rule = parse_rule("deny", "Read(secrets/**)")
    assert hard_links.linked_rule([rule], str(root / "b"), str(root), max_entries=3) == rule
    assert hard_links.linked_rule([rule], str(root / "b"), str(root), max_entries=100) is None


def test_symlinks_in_the_denied_tree_are_not_its_files(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "public.txt").write_text("public")
    os.link(root / "public.txt", root / "public2.txt")
    (root / "secrets" / "link").symlink_to(root / "public.txt")
    assert decide(root, read(root / "public2.txt")) == "allow"


# -- every read tool: the rules are judged where each tool asks them ---------------------------------


def _context(root: Path) -> tuple[ToolContext, PermissionPolicy]:
    policy = PermissionPolicy.from_config([], [], ["Read(secrets/**)"], project_root=str(root))
    return ToolContext(project_root=root, withholds=policy.withholds), policy


def test_view_refuses_a_link_of_a_denied_file(tmp_path: Path) -> None:
    root = project(tmp_path)
    os.link(root / "secrets" / "key.txt", root / "k")
    ctx, policy = _context(root)
    request = ViewTool().permission(ViewParams(path="k"), ctx)
    assert request is not None and policy.decide(request).kind == "deny"


async def test_grep_and_glob_leave_a_link_of_a_denied_file_out(tmp_path: Path) -> None:
    root = project(tmp_path)
    os.link(root / "secrets" / "key.txt", root / "k.txt")
    (root / "public.txt").write_text("private? no, public")
    ctx, _ = _context(root)
    found = await GrepTool().run(GrepParams(pattern="private"), ctx)
    assert "public.txt" in found.content and "k.txt" not in found.content
    listed = await GlobTool().run(GlobParams(pattern="*.txt"), ctx)
    assert "public.txt" in listed.content and "k.txt" not in listed.content
