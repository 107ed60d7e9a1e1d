"""A disk cache of llama.cpp's evaluated state for a prompt's fixed prefix, shared by every run.

Each request of an agent starts with the same system turn (its instructions and tool schemas, a few
thousand tokens), and a CPU evaluates a prompt at a few tens of tokens per second: a new process
would spend over a minute on it before its first token. The engine evaluates such a prefix once,
saves the KV cells that hold it (llama.cpp's per-sequence state: only the cells in use, about
28 KB per token for the bundled model), and later processes load them in well under a second.

This module knows files and bytes, not llama.cpp: the engine hands it the state it got from
llama.cpp and gets back the bytes to give llama.cpp.

- The file name is :func:`prefix_key`: the sha256 of the model file's identity (resolved path,
  size, modification time), the context size, the engine's version and the prefix's tokens. A
  changed model, context, engine or prefix is a different file; nothing is ever reused wrongly.
- A file is ``MAGIC``, the key, the token count, the state's size and a CRC-32 of tokens and
  state, then the tokens (int32) and the state. Anything that does not check out (a truncated,
  corrupted or foreign file) is deleted and reported as absent, never raised.
- Files are written to a temporary name and renamed into place, so a reader sees a whole file or
  none. The directory holds at most ``max_files`` files and ``max_bytes`` bytes: the least
  recently used go first (a hit refreshes a file's modification time).
- Failing to write (a full disk, a read-only directory) only costs the next run the evaluation.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import struct
import sys
import tempfile
import time
import zlib
from array import array
from collections.abc import Sequence
from pathlib import Path

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_FILES", "PrefixCache", "model_identity", "prefix_key"]

MAGIC = b"NESTORKV"
FORMAT_VERSION = 1
DEFAULT_MAX_FILES = 8
DEFAULT_MAX_BYTES = 1 << 30
SUFFIX = ".state"
# magic, key (sha256, raw), token count, state size, CRC-32 of tokens then state.
_HEADER = struct.Struct("<8s32sIQI")
# Temporary files of a writer that died; younger ones may belong to a process writing right now.
_STALE_TEMP_SECONDS = 3600

_log = logging.getLogger(__name__)


def model_identity(model_path: Path) -> str:
    """What identifies a model file without reading it: its resolved path, size and mtime.

    Raises:
        OSError: The file cannot be inspected.

    """
    resolved = model_path.resolve()
    stat = resolved.stat()
    return f"{resolved}\0{stat.st_size}\0{stat.st_mtime_ns}"


def prefix_key(*, model: str, context_window: int, engine_version: str, tokens: Sequence[int]) -> str:
    """The cache key of a prefix's state: hex sha256 of everything the state depends on.

    Args:
        model: The model file's :func:`model_identity`.
        context_window: llama.cpp's ``n_ctx``.
        engine_version: The version of llama-cpp-python (and so of the llama.cpp it bundles).
        tokens: The prefix's tokens.

    """
    digest = hashlib.sha256()
    head = {
        "format": FORMAT_VERSION,
        "model": model,
        "n_ctx": context_window,
        "engine": engine_version,
        "tokens": len(tokens),
    }
    digest.update(json.dumps(head, sort_keys=True).encode("utf-8"))
    digest.update(_token_bytes(tokens))
    return digest.hexdigest()


def _token_bytes(tokens: Sequence[int]) -> bytes:
    packed = array("i", tokens)
    if sys.byteorder != "little":
        packed.byteswap()
    return packed.tobytes()


class PrefixCache:
    """A directory of saved prefix states, bounded in files and bytes.

    Args:
        directory: Where the files live; created on the first write.
        max_files: The most files kept.
        max_bytes: The most bytes kept; a state larger than this is not written at all.

    """

    def __init__(
        self, directory: Path, *, max_files: int = DEFAULT_MAX_FILES, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        self.directory = directory
        self.max_files = max_files
        self.max_bytes = max_bytes

    def path(self, key: str) -> Path:
        """The file of ``key``."""
        return self.directory / f"{key}{SUFFIX}"

    def contains(self, key: str) -> bool:
        """Whether a file for ``key`` exists (not whether it is valid: :meth:`load` checks that)."""
        return self.path(key).is_file()

    def load(self, key: str, tokens: Sequence[int]) -> bytearray | None:
        """The saved state of ``tokens`` under ``key``, or None.

        A file that is not a complete, intact state of exactly these tokens is deleted.
        """
        path = self.path(key)
        try:
            with path.open("rb") as file:
                identity = os.fstat(file.fileno())
                state = self._read(file, identity.st_size, key, tokens)
        except FileNotFoundError:
            return None
        except OSError as error:
            _log.debug("cannot read the prefix state %s: %s", path, error)
            return None
        if state is None:
            _log.debug("discarding the damaged prefix state %s", path)
            self._remove_if_same(path, identity)
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # the eviction order is least recently used
        return state

    def store(self, key: str, tokens: Sequence[int], state: bytes | bytearray | memoryview) -> int:
        """Save ``state`` (the evaluated ``tokens``) under ``key``, then trim the directory.

        Returns:
            The size of the file written; 0 when none was (it would not fit the bound, or an OS
            error).

        """
        token_bytes = _token_bytes(tokens)
        checksum = zlib.crc32(state, zlib.crc32(token_bytes))
        header = _HEADER.pack(MAGIC, bytes.fromhex(key), len(tokens), len(state), checksum)
        size = len(header) + len(token_bytes) + len(state)
        if size > self.max_bytes:
            return 0
        temp: str | None = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self.directory, prefix=f".{key[:16]}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as file:
                file.write(header)
                file.write(token_bytes)
                file.write(state)
            os.replace(temp, self.path(key))
            temp = None
        except OSError as error:
            _log.debug("cannot save the prefix state in %s: %s", self.directory, error)
            return 0
        finally:
            if temp is not None:
                Path(temp).unlink(missing_ok=True)
        try:
            self._trim(keep=key)
        except OSError as error:
            _log.debug("cannot trim the prefix cache %s: %s", self.directory, error)
        return size

    def discard(self, key: str) -> None:
        """Delete the file of ``key`` (llama.cpp refused its state)."""
        with contextlib.suppress(OSError):
            self.path(key).unlink(missing_ok=True)

    def _read(
        self, reader: io.BufferedReader, size: int, key: str, tokens: Sequence[int]
    ) -> bytearray | None:
        """The state in an open cache file, or None when the file does not check out."""
        token_bytes = _token_bytes(tokens)
        if size < _HEADER.size + len(token_bytes):
            return None
        header = bytearray(_HEADER.size)
        if reader.readinto(header) != _HEADER.size:
            return None
        magic, raw_key, count, state_size, checksum = _HEADER.unpack(header)
        if (
            magic != MAGIC
            or raw_key != bytes.fromhex(key)
            or count != len(tokens)
            or size != _HEADER.size + len(token_bytes) + state_size
        ):
            return None
        saved_tokens = bytearray(len(token_bytes))
        state = bytearray(state_size)
        if reader.readinto(saved_tokens) != len(saved_tokens) or reader.readinto(state) != state_size:
            return None
        if saved_tokens != token_bytes or zlib.crc32(state, zlib.crc32(saved_tokens)) != checksum:
            return None
        return state

    def _remove_if_same(self, path: Path, identity: os.stat_result) -> None:
        """Delete ``path`` unless another process has meanwhile renamed a new file into place."""
        with contextlib.suppress(OSError):
            now = path.stat()
            if (now.st_ino, now.st_dev) == (identity.st_ino, identity.st_dev):
                path.unlink()

    def _trim(self, *, keep: str) -> None:
        """Evict the least recently used files beyond the bounds (never ``keep``), and stale temp files."""
        entries: list[tuple[float, int, Path]] = []
        now = time.time()
        for path in self.directory.iterdir():
            try:
                stat = path.stat()
            except OSError:
                continue
            if path.name.endswith(".tmp"):
                if now - stat.st_mtime > _STALE_TEMP_SECONDS:
                    path.unlink(missing_ok=True)
            elif path.name.endswith(SUFFIX) and path.name != f"{keep}{SUFFIX}":
                entries.append((stat.st_mtime, stat.st_size, path))
        kept_size = self.path(keep).stat().st_size
        entries.sort(reverse=True)  # newest first
        count, total = 1, kept_size
        for _, size, path in entries:
            count += 1
            total += size
            if count > self.max_files or total > self.max_bytes:
                with contextlib.suppress(OSError):
                    path.unlink()
                count -= 1
                total -= size
