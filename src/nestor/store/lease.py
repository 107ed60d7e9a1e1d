"""Who holds a session: the process that runs it, and whether that process is still there.

A session is run by one nestor process at a time. The process records itself in the session's
row (pid, host name, a marker of when the process started, a heartbeat); another process reads
that record as *live* while the holder runs, and as *stale* once the holder is gone:

- on this host, the holder is gone when its pid is gone, or the pid now belongs to a process that
  started later (pid reuse after a crash); without ``/proc`` a pid check plus the heartbeat decide;
- on another host (a shared home directory), only the heartbeat can tell: it is stale after
  :data:`STALE_AFTER_S` without a beat.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HEARTBEAT_EVERY_S = 30.0
"""How often a running nestor refreshes the heartbeat of the sessions it holds."""

STALE_AFTER_S = 120.0
"""A holder whose heartbeat is older than this is gone, when its pid cannot be checked."""


@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    """One process, as recorded in a session's lease.

    Attributes:
        pid: The process id.
        host: The host name it runs on.
        start: When it started, as the kernel counts (``/proc/PID/stat``); empty when unknown.

    """

    pid: int
    host: str
    start: str

    @classmethod
    def current(cls) -> ProcessIdentity:
        """The identity of the running process."""
        pid = os.getpid()
        return cls(pid=pid, host=socket.gethostname(), start=process_start(pid))

    @classmethod
    def of(cls, pid: int) -> ProcessIdentity:
        """Another process of this host (tests hold a session in a child process's name)."""
        return cls(pid=pid, host=socket.gethostname(), start=process_start(pid))


def process_start(pid: int) -> str:
    """The start time of ``pid`` in clock ticks since boot, or ``""`` without ``/proc`` (or no such pid)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    # The command name is in parentheses and may hold spaces; starttime is the 20th field after it.
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else ""


def holder_is_live(holder: ProcessIdentity, heartbeat: float, *, clock: Callable[[], float]) -> bool:
    """Whether the process recorded as holding a session still runs (``clock`` read only if needed)."""
    if holder.host != socket.gethostname():
        return clock() - heartbeat < STALE_AFTER_S
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process with that pid: it exists
    if holder.start:
        return process_start(holder.pid) == holder.start
    return clock() - heartbeat < STALE_AFTER_S


def holder_of(row: sqlite3.Row | tuple[Any, ...]) -> ProcessIdentity | None:
    """The holder recorded in a row's lease columns (pid, host, start), or None."""
    if row[0] is None:
        return None
    return ProcessIdentity(pid=int(row[0]), host=str(row[1] or ""), start=str(row[2] or ""))
