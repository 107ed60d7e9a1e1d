import os
from pathlib import Path

import pytest

from nestor.core.files import UnsafeFileError, read_bounded_text


def test_reads_a_regular_file_whole_or_cut_at_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_bytes(b"hello")
    assert read_bounded_text(path, limit_bytes=5).text == "hello"
    assert not read_bounded_text(path, limit_bytes=5).cut
    cut = read_bounded_text(path, limit_bytes=3)
    assert (cut.text, cut.cut) == ("hel", True)


def test_an_endless_device_is_refused_not_read(tmp_path: Path) -> None:
    link = tmp_path / "zero.md"
    link.symlink_to("/dev/zero")
    with pytest.raises(UnsafeFileError, match="not a regular file"):
        read_bounded_text(link, limit_bytes=10)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    with pytest.raises(UnsafeFileError, match="not a regular file"):
        read_bounded_text(fifo, limit_bytes=10)


def test_inside_is_judged_by_the_real_path(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "secret").write_text("key")
    (project / "out.md").symlink_to(tmp_path / "secret")
    (project / "dotdot.md").symlink_to(project / ".." / "secret")
    for name in ("out.md", "dotdot.md"):
        with pytest.raises(UnsafeFileError, match="links outside the project"):
            read_bounded_text(project / name, limit_bytes=10, inside=project)
    assert read_bounded_text(tmp_path / "secret", limit_bytes=10).text == "key"  # no folder given


def test_a_missing_file_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_bounded_text(tmp_path / "none.md", limit_bytes=10, inside=tmp_path)


def test_undecodable_bytes_are_replaced(tmp_path: Path) -> None:
    path = tmp_path / "latin1.md"
    path.write_bytes(b"caf\xe9")
    assert read_bounded_text(path, limit_bytes=100).text == "caf\ufffd"
