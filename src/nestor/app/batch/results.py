"""The results file of ``nestor batch``: one JSON line per finished job, appended, never rewritten.

Each line is written by one ``write()`` of the whole line to a file opened with ``O_APPEND``,
then ``fsync``: a batch killed at any moment keeps every job that finished, and no line is torn
(a machine that loses power mid-write may leave a last line without its newline, which reading
skips). A second run with the same file skips the jobs already recorded (resume).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nestor.core.errors import NestorError

STATUSES = ("done", "failed", "stopped", "cancelled", "error")
"""A job's end: it answered; its run ended in an error or a refusal; a budget stopped it; the
batch was stopped while it ran; it could not run (its repository, its setup command, nestor)."""
RETRIED_BY_FAILED = frozenset({"failed", "error"})


class ResultsFile:
    """The results file a batch appends to.

    Args:
        path: The file (created when missing, with its folder).

    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: dict[str, Any]) -> None:
        """Write ``record`` as one line, in one write, and flush it to the disk before returning.

        Raises:
            NestorError: The file cannot be written (the disk is full, the folder is gone).

        """
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":  # after a torn line: a line of its own
                    line = b"\n" + line
                written = os.write(fd, line)
                if written != len(line):  # a full disk; the reader skips the partial line
                    raise OSError(28, "the line was written only in part")
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as error:
            raise NestorError(
                f"cannot write to {self.path}: {error.strerror or error}",
                hint="free space or give another -o",
            ) from None

    def records(self) -> list[dict[str, Any]]:
        """Every complete line of the file, in order (none when it does not exist)."""
        return read_records(self.path)


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a results file; lines that are not whole JSON objects are skipped.

    Raises:
        NestorError: The file exists but cannot be read.

    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as error:
        raise NestorError(f"cannot read {path}: {error.strerror}", hint="give a results file") from None
    records: list[dict[str, Any]] = []
    for raw in data.split(b"\n")[:-1]:  # the part after the last newline is a torn line
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(value, dict) and isinstance(value.get("id"), str):
            records.append(value)  # pyright: ignore[reportUnknownArgumentType]
    return records


def latest(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each job's last record, by id (a job run again has a later line)."""
    return {record["id"]: record for record in records}


def skipped_ids(records: Iterable[dict[str, Any]], *, redo: bool, retry_failed: bool) -> set[str]:
    """The ids a resumed batch does not run again.

    A cancelled job always runs again; a failed or erroneous one with ``retry_failed``; every one
    with ``redo``.
    """
    if redo:
        return set()
    skipped: set[str] = set()
    for job_id, record in latest(records).items():
        status = record.get("status")
        if status == "cancelled" or (retry_failed and status in RETRIED_BY_FAILED):
            continue
        skipped.add(job_id)
    return skipped
