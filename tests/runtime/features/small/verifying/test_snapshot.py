"""The files a change touched are put back byte for byte, and the files it made are deleted."""

import os
from pathlib import Path

from nestor.runtime.features.small.verifying.snapshot import Snapshot


def test_changed_created_and_deleted_files_are_put_back_exactly(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / "a.py").write_bytes(b"x = 1\r\n# caf\xc3\xa9\r\n")
    os.chmod(root / "a.py", 0o755)
    (root / "gone.txt").write_bytes(b"keep me")
    snapshot = Snapshot(root)
    for path in ("a.py", "gone.txt", "new/deep/file.js"):
        snapshot.keep(path)
    (root / "a.py").write_text("x = 2\n")
    os.chmod(root / "a.py", 0o644)
    (root / "gone.txt").unlink()
    (root / "new" / "deep").mkdir(parents=True)
    (root / "new" / "deep" / "file.js").write_text("let x")

    assert sorted(snapshot.changed()) == ["a.py", "gone.txt", "new/deep/file.js"]
    assert sorted(snapshot.restore()) == ["a.py", "gone.txt", "new/deep/file.js"]

    assert (root / "a.py").read_bytes() == b"x = 1\r\n# caf\xc3\xa9\r\n"
    assert (root / "a.py").stat().st_mode & 0o777 == 0o755
    assert (root / "gone.txt").read_bytes() == b"keep me"
    assert not (root / "new").exists()
    assert sorted(path.name for path in root.iterdir()) == ["a.py", "gone.txt"]
    assert snapshot.changed() == []


def test_the_first_state_is_the_one_kept_and_a_path_outside_the_project_is_not(tmp_path: Path) -> None:
    root = (tmp_path / "project").resolve()
    root.mkdir()
    (root / "a.py").write_text("one\n")
    snapshot = Snapshot(root)
    snapshot.keep("a.py")
    (root / "a.py").write_text("two\n")
    snapshot.keep("a.py")  # a second edit of the same file: the state before the first stays
    snapshot.keep("../outside.txt")
    assert snapshot.kept() == ["a.py"]
    snapshot.restore()
    assert (root / "a.py").read_text() == "one\n"
