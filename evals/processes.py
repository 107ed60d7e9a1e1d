"""Running a command in its own process group, with a time limit that takes the whole group down.

An agent under test starts shells, test runners and servers of its own: killing only the process
the eval started would leave those running (and holding the CPU the next task needs).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

TERMINATE_GRACE_S = 5.0
"""How long a timed-out command gets after SIGTERM (to print what it has) before SIGKILL."""


@dataclass(frozen=True, slots=True)
class Finished:
    """What a command did.

    Attributes:
        returncode: Its exit code (negative: killed by that signal).
        stdout: Everything it printed on stdout.
        stderr: Everything it printed on stderr.
        seconds: Wall time from start to exit.
        first_line_s: Seconds from start until stdout's first complete line, or None if it printed none.
        timed_out: True when it ran past its time limit and was stopped.

    """

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    first_line_s: float | None
    timed_out: bool


def run_in_group(
    command: str | Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout_s: float,
) -> Finished:
    """Run ``command`` (a shell line when a string) in a new process group and wait for it.

    Past ``timeout_s`` the group gets SIGTERM, then SIGKILL after :data:`TERMINATE_GRACE_S`. Once
    the command exits, whatever it left running in its group is killed. An exception while
    waiting (a KeyboardInterrupt) kills the group too, then propagates.
    """
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        shell=isinstance(command, str),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=True,
    )
    assert process.stdout is not None and process.stderr is not None
    stdout = _Reader(process.stdout, started)
    stderr = _Reader(process.stderr, started)
    timed_out = False
    try:
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=TERMINATE_GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(process.pid, signal.SIGKILL)
                process.wait()
        seconds = time.monotonic() - started
    finally:
        _signal_group(process.pid, signal.SIGKILL)
        if process.poll() is None:
            process.wait()
    stdout.join()
    stderr.join()
    return Finished(
        returncode=process.returncode,
        stdout=stdout.text(),
        stderr=stderr.text(),
        seconds=seconds,
        first_line_s=stdout.first_line_s,
        timed_out=timed_out,
    )


def _signal_group(group: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signum)


class _Reader:
    """Drains a pipe in a thread (so a chatty command never blocks on a full pipe)."""

    def __init__(self, pipe: IO[str], started: float) -> None:
        self._pipe = pipe
        self._started = started
        self._lines: list[str] = []
        self.first_line_s: float | None = None
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        with self._pipe:
            for line in self._pipe:
                if self.first_line_s is None and line.endswith("\n"):
                    self.first_line_s = time.monotonic() - self._started
                self._lines.append(line)

    def join(self) -> None:
        # The group is dead by now, so the pipe is closed unless something escaped the group.
        self._thread.join(timeout=10)

    def text(self) -> str:
        return "".join(self._lines)


TOOLCHAIN_HOMES = (("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo"))
"""Where rustup and cargo keep the toolchain: in the user's home unless these variables say."""


def toolchain_homes(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The toolchain homes of this user, for a process given a private ``HOME``.

    rustup finds the installed toolchain in ``~/.rustup``; under another ``HOME`` it finds none
    and ``cargo`` fails before compiling anything. So a harness that runs with a home of its own
    gets these variables pointing at the real ones (those that exist).
    """
    source = os.environ if environ is None else environ
    home = Path(source.get("HOME") or Path.home())
    found: dict[str, str] = {}
    for name, default in TOOLCHAIN_HOMES:
        path = Path(source.get(name) or home / default)
        if path.is_dir():
            found[name] = str(path)
    return found
