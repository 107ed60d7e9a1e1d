import os
from pathlib import Path, PurePath

import pytest

from nestor.core.files import (
    DIRECTORY_FLAGS,
    FileTooLargeError,
    LinkInPathError,
    UnsafeFileError,
    open_no_links,
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


def test_a_resolved_path_is_opened_without_following_a_link_swapped_into_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f").write_text("outside")
    folder = tmp_path / "project" / "d"
    folder.mkdir(parents=True)
    (folder / "f").write_text("inside")
    judged = folder / "f"  # resolved: no link in it
    folder.rename(tmp_path / "project" / "aside")
    folder.symlink_to(outside)  # swapped in after the path was judged

    with pytest.raises(LinkInPathError, match=r"d became a symbolic link") as raised:
        read_bounded_bytes(judged, limit_bytes=100, resolved=True)
    assert raised.value.link == folder
    with pytest.raises(LinkInPathError):
        write_regular_file(judged, b"x", resolved=True)
    with pytest.raises(LinkInPathError):
        write_regular_file(folder / "new" / "f", b"x", resolved=True, make_parents=True)
    assert sorted(path.name for path in outside.iterdir()) == ["f"]
    assert (outside / "f").read_text() == "outside"
    # Not resolved by the caller: resolved here once, where the link leads now, then opened.
    assert read_bounded_bytes(judged, limit_bytes=100).data == b"outside"


def test_missing_folders_are_made_on_the_way_and_a_file_in_the_way_is_named(tmp_path: Path) -> None:
    write_regular_file(tmp_path / "a" / "b" / "f", b"x", resolved=True, make_parents=True)
    assert (tmp_path / "a" / "b" / "f").read_bytes() == b"x"
    with pytest.raises(NotADirectoryError):
        write_regular_file(tmp_path / "a" / "b" / "f" / "g", b"x", resolved=True, make_parents=True)
    with pytest.raises(FileNotFoundError):
        write_regular_file(tmp_path / "c" / "f", b"x", resolved=True)


def test_a_folder_is_opened_relative_to_another_and_made_when_asked(tmp_path: Path) -> None:
    root = os.open(tmp_path, DIRECTORY_FLAGS)
    try:
        os.close(open_no_links(PurePath("x/y"), DIRECTORY_FLAGS, make_parents=True, dir_fd=root))
        assert (tmp_path / "x" / "y").is_dir()
        (tmp_path / "l").symlink_to(tmp_path / "x")
        with pytest.raises(LinkInPathError):
            open_no_links(PurePath("l/y"), DIRECTORY_FLAGS, dir_fd=root)
        with pytest.raises(ValueError, match="not a resolved path"):
            open_no_links(PurePath("x/../x"), DIRECTORY_FLAGS, dir_fd=root)
    finally:
        os.close(root)
