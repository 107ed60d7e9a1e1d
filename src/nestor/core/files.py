"""Reading and writing files safely: a regular file, inside its folder, and not too big.

An instruction or agent file is a stranger's input, and so is any path a model names. Git stores
symlinks, so ``AGENTS.md`` can point at ``~/.ssh/id_ed25519`` or ``/proc/self/environ``, and a FIFO
or ``/dev/zero`` would hang or fill memory. :func:`read_bounded_bytes` (and
:func:`read_bounded_text` on top of it) resolves the path, refuses what leaves the allowed folder or
is not a regular file, and reads at most a fixed number of bytes; :func:`write_regular_file` writes
only into a regular file (or a new one). Neither ever waits on a FIFO.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

# O_NONBLOCK: opening a FIFO must not wait for the other end; fstat then refuses it. On a regular
# file the flag changes nothing.
_OPEN_FLAGS = getattr(os, "O_CLOEXEC", 0) | os.O_NONBLOCK

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
        path: The file; symlinks are followed, and judged by where they lead.
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
    path: Path, *, limit_bytes: int, inside: Path | None = None, whole: bool = False
) -> BoundedBytes:
    """Read at most ``limit_bytes`` of ``path``, never waiting on a FIFO or reading a device.

    Args:
        path: The file; symlinks are followed, and judged by where they lead.
        limit_bytes: The most bytes read; :attr:`BoundedBytes.cut` says whether there was more.
        inside: When given, the file's real path must lie inside this folder's real path.
        whole: Refuse a file over ``limit_bytes`` (checked before reading) rather than cut it.

    Raises:
        FileNotFoundError: There is no such file.
        UnsafeFileError: It leaves ``inside`` or is not a regular file (a directory, FIFO, device).
        FileTooLargeError: ``whole`` is set and the file is over ``limit_bytes``.
        OSError: It cannot be opened or read.

    """
    real = Path(os.path.realpath(path))
    if inside is not None and not real.is_relative_to(os.path.realpath(inside)):
        raise UnsafeFileError(0, "links outside the project", str(path))
    descriptor = os.open(real, os.O_RDONLY | _OPEN_FLAGS)
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


def write_regular_file(path: Path, data: bytes) -> None:
    """Write ``data`` as the whole content of ``path``, a regular file or a new one.

    The file is opened without truncating and checked first, so a FIFO (which would wait for a
    reader) or a device (``/dev/zero``, a disk) is refused untouched. Symlinks are followed.

    Raises:
        UnsafeFileError: ``path`` exists and is not a regular file.
        OSError: It cannot be opened or written.

    """
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | _OPEN_FLAGS, 0o666)
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
