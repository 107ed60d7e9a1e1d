"""Where the warm process listens, and which installation it is: both read before anything heavy.

The socket lies in the user's runtime folder (``$XDG_RUNTIME_DIR/nestor``, else
``/tmp/nestor-<uid>``), a folder the user owns that nobody else may enter (mode 0700, not a
link); any other folder is not used, and the command then runs in its own process. The
socket's name carries the installation's identity (nestor's version, the interpreter, the
import path and the state of nestor's source files), so a server never runs code other than
the code the command was started with: after an upgrade or an edit a new server starts beside
the old one, which exits when idle. Only ``os``, ``stat`` and ``zlib`` are imported: this runs
before every command it serves.
"""

from __future__ import annotations

import os
import stat
import sys
import zlib

WARM_ENV = "NESTOR_WARM"
"""Set to ``0`` to run every command in its own process, neither asking nor starting a server."""

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def warm_enabled() -> bool:
    """Whether commands may use (and start) the warm process: unless ``NESTOR_WARM=0``."""
    return os.environ.get(WARM_ENV, "1") != "0"


def runtime_dir() -> str:
    """The user's runtime folder for nestor's sockets (not made nor checked here)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.path.isabs(base):
        return os.path.join(base, "nestor")
    return f"/tmp/nestor-{os.getuid()}"


def private_dir() -> str | None:
    """The runtime folder, created 0700 when missing; None when it is not the user's alone."""
    folder = runtime_dir()
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return folder


def installation_identity() -> str:
    """What a command would run: nestor's version, the interpreter, the import path, nestor's files."""
    from nestor import __version__

    sources: list[str] = []
    folders = [_PACKAGE_DIR]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        folders.append(entry.path)
                elif entry.name.endswith((".py", ".md")):
                    info = entry.stat(follow_symlinks=False)
                    sources.append(f"{entry.path}:{info.st_mtime_ns}:{info.st_size}")
    # The script's folder (``-m``: the current one) is left out: the server runs without it (-P).
    import_path = sys.path if sys.flags.safe_path else sys.path[1:]
    path_sum = zlib.crc32("\0".join(import_path).encode(errors="surrogateescape"))
    source_sum = zlib.crc32("\0".join(sorted(sources)).encode(errors="surrogateescape"))
    return f"{__version__}:{sys.executable}:{path_sum:08x}:{len(sources)}:{source_sum:08x}"


def socket_path(folder: str, identity: str) -> str:
    """The socket of the server of installation ``identity`` in ``folder``."""
    return os.path.join(folder, f"serve-{zlib.crc32(identity.encode(errors='surrogateescape')):08x}.sock")
