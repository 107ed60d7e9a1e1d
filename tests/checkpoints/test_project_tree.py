"""The project's files as an undo sees them: nothing is read or changed through a link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nestor.checkpoints.project_tree import ProjectTree
from nestor.core.files import LinkInPathError


def test_a_file_behind_a_linked_folder_is_not_there(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("outside\n")
    (root / "d").symlink_to(outside)
    os.mkfifo(root / "fifo")

    with ProjectTree(root) as tree:
        assert tree.state("d") == ("link", os.fsencode(outside), False)
        assert tree.state("d/f.txt") is None
        assert tree.lstat("d/f.txt") is None
        assert tree.state("fifo") == ("other", b"", False)  # never opened: it would wait for a writer
        for change in (
            lambda: tree.write_new("d/new.txt", b"x", 0o644),
            lambda: tree.mkdir("d/sub"),
            lambda: tree.rename("fifo", "d/fifo"),
            lambda: tree.unlink("d/f.txt"),
        ):
            with pytest.raises(LinkInPathError):
                change()
    assert sorted(path.name for path in outside.iterdir()) == ["f.txt"]
