"""Writing an undo's files: all or none, and never through a folder that became a link."""

from __future__ import annotations

from pathlib import Path

import pytest

from nestor.checkpoints.project_tree import ProjectTree
from nestor.checkpoints.restore import STAGING_PREFIX, Target, apply, problems
from nestor.core.errors import CheckpointError


def test_a_folder_linked_after_the_checks_is_never_written_through(tmp_path: Path) -> None:
    # A command still running (a background agent's) swaps a folder for a link while the undo runs.
    root = tmp_path / "project"
    (root / "d").mkdir(parents=True)
    (root / "d" / "f.txt").write_text("now\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    targets = {
        "d/f.txt": Target("d/f.txt", "file", b"before\n"),
        "d/new/g.txt": Target("d/new/g.txt", "file", b"g\n"),
    }
    with ProjectTree(root) as tree:
        assert problems(tree, root, targets, 1000) == []
        (root / "d").rename(root / "d.aside")
        (root / "d").symlink_to(outside)

        with pytest.raises(CheckpointError, match=r"d became a symbolic link .*; nothing was changed"):
            apply(tree, targets)

    assert list(outside.iterdir()) == []
    assert (root / "d.aside" / "f.txt").read_text() == "now\n"
    assert not any(path.name.startswith(STAGING_PREFIX) for path in root.iterdir())


def test_a_link_target_and_modes_are_written_and_a_folder_made(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "gone.txt").write_text("x")
    targets = {
        "a/b/run.sh": Target("a/b/run.sh", "file", b"#!/bin/sh\n", executable=True),
        "a/link": Target("a/link", "link", b"b/run.sh"),
        "gone.txt": Target("gone.txt", "absent"),
    }
    with ProjectTree(root) as tree:
        apply(tree, targets)
        assert tree.state("a/link") == ("link", b"b/run.sh", False)
        assert tree.state("a/b/run.sh") == ("file", b"#!/bin/sh\n", True)
        assert tree.state("gone.txt") is None
    assert sorted(path.name for path in root.iterdir()) == ["a"]
