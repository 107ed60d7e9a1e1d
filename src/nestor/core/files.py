"""Reading and writing files safely: a regular file, inside its folder, and not too big.

An instruction or agent file is a stranger's input, and so is any path a model names. Git stores
symlinks, so ``AGENTS.md`` can point at ``~/.ssh/id_ed25519`` or ``/proc/self/environ``, and a FIFO
or ``/dev/zero`` would hang or fill memory. :func:`read_bounded_bytes` (and
:func:`read_bounded_text` on top of it) resolves the path, refuses what leaves the allowed folder or
is not a regular file, and reads at most a fixed number of bytes; :func:`write_regular_file` writes
only into a regular file (or a new one). Neither ever waits on a FIFO.

Both open the path they judged, never a name that can change meanwhile: :func:`open_no_links` walks
it from ``/`` one folder at a time without following a symbolic link, so a link a command swaps in
after the path was resolved (and its permission checked) fails the call instead of sending the read
or the write elsewhere. nestor's file tools run in its own, unsandboxed process, while commands in
the sandbox may rename and link the project's files at any moment.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePath

# O_NONBLOCK: opening a FIFO must not wait for the other end; fstat then refuses it. On a regular
# file the flag changes nothing.
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_OPEN_FLAGS = _CLOEXEC | os.O_NONBLOCK
DIRECTORY_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | _CLOEXEC
"""Flags that open a folder as a place to open, make or rename files in (``O_PATH`` needs no read
permission on it); :func:`open_no_links` adds ``O_NOFOLLOW``."""

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class UnsafeFileError(OSError):
    """The file is not read: it leaves the allowed folder or is not a regular file.

    ``strerror`` says why in a few words, e.g. ``links outside the project`` or ``not a regular
    file but a FIFO (named pipe)``; :attr:`kind` names what it is instead, when that is the reason.
    """

    kind: str | None = None


class LinkInPathError(UnsafeFileError):
    """A folder or the file itself is a symbolic link now, where the path was resolved without one.

    A command swapped it in after the path was resolved (and judged): nothing was read or written.
    :attr:`link` is the part of the path that is a link.
    """

    def __init__(self, path: PurePath, link: PurePath) -> None:
        super().__init__(0, f"{link} became a symbolic link after the path was checked", str(path))
        self.link = link


class FileTooLargeError(OSError):
    """The file is larger than the caller reads whole; :attr:`size` is its size in bytes."""

    def __init__(self, path: Path, size: int) -> None:
        super().__init__(0, "file too large", str(path))
        self.size = size


def file_kind(mode: int) -> str:
    """Name the kind of file a ``st_mode`` describes: ``a regular file``, ``a FIFO (named pipe)``, ..."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


def _not_regular(path: Path, mode: int) -> UnsafeFileError:
    kind = file_kind(mode)
    error = UnsafeFileError(0, f"not a regular file but {kind}", str(path))
    error.kind = kind
    return error


@dataclass(frozen=True, slots=True)
class BoundedBytes:
    """The bytes read, the file's size when opened, and whether the file went on past the limit."""

    data: bytes
    size: int
    cut: bool


@dataclass(frozen=True, slots=True)
class BoundedText:
    """The text read, and whether the file went on past the limit."""

    text: str
    cut: bool


def read_bounded_text(
    path: Path, *, limit_bytes: int, inside: Path | None = None, errors: str = "replace"
) -> BoundedText:
    """Read at most ``limit_bytes`` of ``path`` as UTF-8 (undecodable bytes replaced, by default).

    Args:
        path: The file; symlinks are resolved once, and judged by where they lead.
        limit_bytes: The most bytes read; :attr:`BoundedText.cut` says whether there was more.
        inside: When given, the file's real path must lie inside this folder's real path.
        errors: How undecodable bytes are handled, as for :meth:`bytes.decode` (``strict`` raises).

    Raises:
        FileNotFoundError: There is no such file.
        UnsafeFileError: It leaves ``inside`` or is not a regular file (a directory, FIFO, device).
        OSError: It cannot be opened or read.
        UnicodeDecodeError: It is not UTF-8 and ``errors`` is ``strict``.

    """
    read = read_bounded_bytes(path, limit_bytes=limit_bytes, inside=inside)
    return BoundedText(read.data.decode("utf-8", errors=errors), read.cut)


def read_bounded_bytes(
    path: Path, *, limit_bytes: int, inside: Path | None = None, whole: bool = False, resolved: bool = False
) -> BoundedBytes:
    """Read at most ``limit_bytes`` of ``path``, never waiting on a FIFO or reading a device.

    Args:
        path: The file; symlinks are resolved once, and judged by where they lead; the real path
            is then opened without following any link.
        limit_bytes: The most bytes read; :attr:`BoundedBytes.cut` says whether there was more.
        inside: When given, the file's real path must lie inside this folder's real path.
        whole: Refuse a file over ``limit_bytes`` (checked before reading) rather than cut it.
        resolved: ``path`` is already resolved (the path a permission judged): it is opened as
            given, and a link in any part of it fails the read rather than being followed.

    Raises:
        FileNotFoundError: There is no such file.
        UnsafeFileError: It leaves ``inside`` or is not a regular file (a directory, FIFO, device);
            :class:`LinkInPathError` when a part of the path became a link after it was resolved.
        FileTooLargeError: ``whole`` is set and the file is over ``limit_bytes``.
        OSError: It cannot be opened or read.

    """
    real = path if resolved else Path(os.path.realpath(path))
    if inside is not None and not real.is_relative_to(os.path.realpath(inside)):
        raise UnsafeFileError(0, "links outside the project", str(path))
    descriptor = open_no_links(real, os.O_RDONLY | _OPEN_FLAGS)
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise _not_regular(path, status.st_mode)
        if whole and status.st_size > limit_bytes:
            raise FileTooLargeError(path, status.st_size)
        chunks: list[bytes] = []
        remaining = limit_bytes + 1
        while remaining > 0 and (chunk := os.read(descriptor, min(remaining, 1 << 16))):
            chunks.append(chunk)
            remaining -= len(chunk)
    finally:
        os.close(descriptor)
    data = b"".join(chunks)
    cut = len(data) > limit_bytes
    if cut and whole:  # it grew while being read
        raise FileTooLargeError(path, max(len(data), status.st_size))
    return BoundedBytes(data[:limit_bytes], status.st_size, cut)


def write_regular_file(
    path: Path, data: bytes, *, resolved: bool = False, make_parents: bool = False
) -> None:
    """Write ``data`` as the whole content of ``path``, a regular file or a new one.

    The file is opened without truncating and checked first, so a FIFO (which would wait for a
    reader) or a device (``/dev/zero``, a disk) is refused untouched.

    Args:
        path: The file; symlinks are resolved once, and the real path opened without following any.
        data: Its new content.
        resolved: ``path`` is already resolved (the path a permission judged): it is opened as
            given, and a link in any part of it fails the write rather than being followed.
        make_parents: Create the missing folders of its path (never through a link).

    Raises:
        UnsafeFileError: ``path`` exists and is not a regular file; :class:`LinkInPathError` when
            a part of the path became a link after it was resolved.
        OSError: It cannot be opened or written (``NotADirectoryError``: a folder of its path is a file).

    """
    real = path if resolved else Path(os.path.realpath(path))
    try:
        flags = os.O_WRONLY | os.O_CREAT | _OPEN_FLAGS
        descriptor = open_no_links(real, flags, 0o666, make_parents=make_parents)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # what a FIFO without a reader answers a non-blocking open
            raise _not_regular(path, stat.S_IFIFO) from None
        raise
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode)
        os.set_blocking(descriptor, True)
        os.ftruncate(descriptor, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
    finally:
        os.close(descriptor)


def open_no_links(
    path: PurePath, flags: int, mode: int = 0o666, *, make_parents: bool = False, dir_fd: int | None = None
) -> int:
    """Open ``path`` without following a symbolic link in any of its parts; return the descriptor.

    The path is walked one folder at a time from ``/`` (or from ``dir_fd`` for a relative path),
    each opened with ``O_NOFOLLOW``, so the file opened is the one at that path now, whatever a
    link elsewhere says. Give it a resolved path (no ``.``, ``..`` or link in it): a link that is
    there anyway fails the call, as a link swapped in after the path was resolved must.

    Args:
        path: An absolute path, or one relative to ``dir_fd``.
        flags: The flags of the last part (``O_NOFOLLOW`` and ``O_CLOEXEC`` are added);
            :data:`DIRECTORY_FLAGS` opens a folder to work in.
        mode: The mode of a file ``O_CREAT`` makes.
        make_parents: Create the missing folders on the way (and the last part too when ``flags``
            open a folder).
        dir_fd: The folder a relative ``path`` starts from.

    Raises:
        LinkInPathError: A part of the path is a symbolic link.
        FileNotFoundError: A part is missing (and ``make_parents`` is not set, or it is the last).
        NotADirectoryError: A folder of the path is a file.
        ValueError: The path holds ``.`` or ``..``, or is relative without ``dir_fd``.
        OSError: Any other failure to open.

    """
    absolute = path.is_absolute()
    parts = path.parts[1:] if absolute else path.parts
    if any(part in (".", "..") for part in parts):
        raise ValueError(f"not a resolved path: {path}")
    if absolute:
        here = os.open("/", DIRECTORY_FLAGS)
    elif dir_fd is not None:
        here = dir_fd
    else:
        raise ValueError(f"a relative path needs the folder it starts from: {path}")
    owned = absolute  # the descriptor of the folder walked through, closed once past it
    walked = PurePath(path.anchor)
    try:
        if not parts:
            return os.open(".", flags | _CLOEXEC, mode, dir_fd=here)
        for name in parts[:-1]:
            walked /= name
            folder = _open_part(here, name, DIRECTORY_FLAGS, 0, path, walked, make=make_parents)
            if owned:
                os.close(here)
            here, owned = folder, True
        make_last = make_parents and bool(flags & os.O_DIRECTORY)
        return _open_part(here, parts[-1], flags | _CLOEXEC, mode, path, walked / parts[-1], make=make_last)
    finally:
        if owned:
            os.close(here)


def _open_part(
    folder: int, name: str, flags: int, mode: int, path: PurePath, walked: PurePath, *, make: bool = False
) -> int:
    """Open ``name`` in ``folder`` without following it; when missing and ``make``, make it a folder first."""
    try:
        return os.open(name, flags | os.O_NOFOLLOW, mode, dir_fd=folder)
    except FileNotFoundError:
        if not make:
            raise
        with contextlib.suppress(FileExistsError):  # made meanwhile: opened (never followed) below
            os.mkdir(name, 0o777, dir_fd=folder)
        return _open_part(folder, name, flags, mode, path, walked)
    except OSError as error:
        if error.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise
        try:
            kind = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
        except OSError:
            raise error from None
        if stat.S_ISLNK(kind):
            raise LinkInPathError(path, walked) from None
        raise
