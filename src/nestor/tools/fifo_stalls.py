"""Noticing a program nestor runs for itself stuck opening a FIFO a repository planted.

git and ripgrep open every ignore file, index and ref they meet with a blocking ``open``; a FIFO
(named pipe) in its place blocks them until someone writes to it, which nobody will. A repository
can plant one to hang a start or a search. Linux shows where each thread sleeps in
``/proc/PID/task/TID/wchan``; a thread opening a FIFO with no writer sleeps in
``wait_for_partner``. The watch polls that while the program runs, and stops it at once when it
sleeps there twice in a row, instead of letting it run out a time limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterable
from pathlib import Path

FIFO_OPEN_WAIT = "wait_for_partner"
"""The kernel function a thread sleeps in while it opens a FIFO that has no writer."""

POLL_S = 0.2
STRIKES = 2
"""Polls in a row that find it there: a thread may pass through that sleep for a FIFO being opened."""


class FifoStallError(Exception):
    """A program nestor ran was stuck opening a FIFO, and was stopped."""


def waits_on_fifo(pids: Iterable[int]) -> bool:
    """Whether a thread of any of ``pids`` is asleep opening a FIFO."""
    for pid in pids:
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                if (task / "wchan").read_text() == FIFO_OPEN_WAIT:
                    return True
            except OSError:
                continue
    return False


def group_members(group: int) -> list[int]:
    """The processes of process group ``group`` (a sandbox's children keep their launcher's group)."""
    members: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return [group]
    for name in entries:
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 2 and fields[2] == str(group):
            members.append(int(name))
    return members or [group]


async def watch(process: asyncio.subprocess.Process, *, group: bool) -> None:
    """Return when ``process`` ends; raise :class:`FifoStallError` after killing it if it stalls on a FIFO.

    ``group``: the process leads a process group of its own (``start_new_session``), whose members
    are watched and killed with it.
    """
    strikes = 0
    while process.returncode is None:
        strikes = stalled(process.pid, strikes, group=group)
        if strikes >= STRIKES:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if group:
                    os.killpg(process.pid, signal.SIGKILL)
                else:
                    process.kill()
            raise FifoStallError("it was stuck opening a FIFO (a named pipe) in the project")
        await asyncio.sleep(POLL_S)


def stalled(pid: int, strikes: int, *, group: bool) -> int:
    """One poll for a program that is not awaited (``subprocess.Popen``): the strikes so far.

    Returns the new count; at :data:`STRIKES` the caller kills the program.
    """
    pids = group_members(pid) if group else [pid]
    return strikes + 1 if waits_on_fifo(pids) else 0
