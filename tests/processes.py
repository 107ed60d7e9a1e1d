"""Looking at live processes through /proc, for tests that check nothing outlives a command."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path


def _stat_fields(pid: int) -> list[str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name is in parentheses and may contain spaces; the fields after it are plain.
    return stat.rpartition(")")[2].split()


def is_running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie waiting to be reaped."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def live_group_members(group: int) -> list[int]:
    """The pids of the process group ``group`` that are alive (zombies do not count)."""
    members: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None and fields[0] != "Z" and int(fields[2]) == group:
            members.append(int(entry.name))
    return members


def wait_for_group_to_die(group: int, *, within_s: float = 10.0) -> list[int]:
    """Poll until the group has no live member; return the members still alive at the end."""
    deadline = time.monotonic() + within_s
    while (members := live_group_members(group)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return members


def find_command(argv: list[str], ready: Path, alive: Callable[[], bool], *, within_s: float = 60.0) -> int:
    """The host pid of the process running exactly ``argv``, once the file ``ready`` exists.

    Found through /proc by its command line, so it works inside a sandbox's pid namespace too,
    where the shell's own ``$$`` is a namespace pid that means nothing outside.
    """
    wanted = b"".join(arg.encode() + b"\0" for arg in argv)
    deadline = time.monotonic() + within_s
    while True:
        assert alive(), "the process that should run the command exited before it started"
        assert time.monotonic() < deadline, "the command never started"
        if ready.exists():
            for entry in Path("/proc").iterdir():
                with contextlib.suppress(OSError):
                    if entry.name.isdigit() and (entry / "cmdline").read_bytes() == wanted:
                        return int(entry.name)
        time.sleep(0.05)
