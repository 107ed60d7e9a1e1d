"""Reading a text file that a repository provides: a regular file, inside its folder, and not too big.

An instruction or agent file is a stranger's input. Git stores symlinks, so ``AGENTS.md`` can point
at ``~/.ssh/id_ed25519`` or ``/proc/self/environ``, and a FIFO or ``/dev/zero`` would hang or fill
memory. :func:`read_bounded_text` resolves the path, refuses what leaves the allowed folder or is
not a regular file, and reads at most a fixed number of bytes.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path


class UnsafeFileError(OSError):
    """The file is not read: it leaves the allowed folder or is not a regular file.

    ``strerror`` says why in a few words, e.g. ``links outside the project``.
    """


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
    real = Path(os.path.realpath(path))
    if inside is not None and not real.is_relative_to(os.path.realpath(inside)):
        raise UnsafeFileError(0, "links outside the project", str(path))
    # O_NONBLOCK: opening a FIFO must not wait for a writer; the fstat below then refuses it.
    descriptor = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise UnsafeFileError(0, "not a regular file", str(path))
        chunks: list[bytes] = []
        remaining = limit_bytes + 1
        while remaining > 0 and (chunk := os.read(descriptor, min(remaining, 1 << 16))):
            chunks.append(chunk)
            remaining -= len(chunk)
    finally:
        os.close(descriptor)
    data = b"".join(chunks)
    cut = len(data) > limit_bytes
    return BoundedText(data[:limit_bytes].decode("utf-8", errors=errors), cut)
