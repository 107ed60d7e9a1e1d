import os
from pathlib import Path

import pytest

from nestor.core.files import (
    FileTooLargeError,
    UnsafeFileError,
    read_bounded_bytes,
    read_bounded_text,
    write_regular_file,
)


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


def test_a_file_read_whole_is_refused_over_the_limit_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 11)
    assert read_bounded_bytes(path, limit_bytes=11, whole=True).data == b"x" * 11
    with pytest.raises(FileTooLargeError) as raised:
        read_bounded_bytes(path, limit_bytes=10, whole=True)
    assert raised.value.size == 11


def test_writing_refuses_a_fifo_and_a_device_untouched(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "null"
    link.symlink_to("/dev/null")
    with pytest.raises(UnsafeFileError, match=r"not a regular file but a FIFO \(named pipe\)"):
        write_regular_file(fifo, b"x")
    with pytest.raises(UnsafeFileError, match="not a regular file but a character device"):
        write_regular_file(link, b"x")


def test_writing_replaces_the_whole_content_through_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "target.txt"
    target.write_bytes(b"a much longer old content")
    (tmp_path / "link.txt").symlink_to(target)
    write_regular_file(tmp_path / "link.txt", b"new")
    write_regular_file(tmp_path / "fresh.txt", b"")
    assert target.read_bytes() == b"new"
    assert (tmp_path / "fresh.txt").read_bytes() == b""
