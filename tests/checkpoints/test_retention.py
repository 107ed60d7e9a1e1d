"""Pruning: the shadow repository keeps only what remaining checkpoints need."""

from __future__ import annotations

import subprocess
from pathlib import Path

from nestor.checkpoints.recorder import ToolCall
from nestor.checkpoints.retention import prune_old, prune_project
from tests.checkpoints.support import open_project


def git_output(*args: str, stdin: str | None = None) -> str:
    return subprocess.run(["git", *args], input=stdin, capture_output=True, text=True, check=True).stdout


def objects(git_dir: Path) -> set[str]:
    return {
        folder.name + path.name
        for folder in (git_dir / "objects").iterdir()
        if len(folder.name) == 2
        for path in folder.iterdir()
    }


async def test_deleting_a_session_prunes_its_snapshots_and_the_last_one_removes_the_shadow(
    tmp_path: Path,
) -> None:
    project = open_project(tmp_path / "project", tmp_path / "data")
    try:
        (project.root / "shared.txt").write_text("in both sessions\n")
        project.prompt("one")
        await project.recorder.starting(ToolCall("main", "c1", "bash"))
        (project.root / "only-first.txt").write_text("the first session's own file\n")
        await project.recorder.finished("c1")
        first_session, shadow = project.session_id, project.recorder.shadow
        second = project.sessions.create(project.root)
        project.session_id = second.id
        project.recorder = project.new_recorder()
        (project.root / "only-first.txt").unlink()
        project.prompt("two")
        await project.recorder.starting(ToolCall("main", "c2", "bash"))
        kept_tree = project.recorder.tree
        assert kept_tree is not None

        project.sessions.delete(first_session)
        await prune_project(project.data_dir, project.root, project.checkpoints)

        remaining = objects(shadow.git_dir)
        listing = git_output("--git-dir", str(shadow.git_dir), "ls-tree", "-r", kept_tree)
        assert "shared.txt" in listing and kept_tree in remaining
        assert not (shadow.index_file(first_session)).exists() and shadow.index_file(second.id).exists()
        first_blob = git_output("hash-object", "--stdin", stdin="the first session's own file\n").strip()
        assert first_blob not in remaining

        project.sessions.delete(second.id)
        await prune_project(project.data_dir, project.root, project.checkpoints)
        assert not shadow.git_dir.exists()
    finally:
        project.close()


async def test_old_checkpoints_are_pruned_and_zero_days_keeps_them(tmp_path: Path) -> None:
    project = open_project(tmp_path / "project", tmp_path / "data")
    try:
        project.prompt("one")
        await project.recorder.starting(ToolCall("main", "c1", "bash"))
        assert await prune_old(project.data_dir, project.checkpoints, 0) == []
        pruned = await prune_old(project.data_dir, project.checkpoints, 30, clock=lambda: 1e12)
        assert pruned == [str(project.root.resolve())]
        assert project.checkpoints.of_session(project.session_id) == []
        assert not project.recorder.shadow.git_dir.exists()
    finally:
        project.close()


async def test_a_session_whose_snapshots_were_pruned_starts_again_without_false_changes(
    tmp_path: Path,
) -> None:
    project = open_project(tmp_path / "project", tmp_path / "data")
    try:
        (project.root / "a.txt").write_text("a\n")
        project.prompt("one")
        await project.recorder.starting(ToolCall("main", "c1", "bash"))
        await prune_old(project.data_dir, project.checkpoints, 30, clock=lambda: 1e12)
        project.prompt("two")
        await project.recorder.starting(ToolCall("main", "c2", "bash"))
        (project.root / "b.txt").write_text("b\n")
        await project.recorder.finished("c2")
        changed = [c.path for row in project.checkpoints.of_session(project.session_id) for c in row.changes]
    finally:
        project.close()
    assert changed == ["b.txt"]
