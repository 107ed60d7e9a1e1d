"""Which sandbox backend this machine can run: bubblewrap, else Landlock, else none."""

from __future__ import annotations

import asyncio
import os
import subprocess
from dataclasses import dataclass
from typing import Literal, TypeAlias

from nestor.tools.programs import find_program
from nestor.tools.sandbox.bwrap import BASE_OPTIONS

Backend: TypeAlias = Literal["bwrap", "landlock"]

LANDLOCK_NETWORK_ABI = 4
"""The first Landlock ABI that can deny TCP bind and connect (Linux 6.7)."""


@dataclass(frozen=True, slots=True)
class Availability:
    """The backend commands will run under, and what it cannot enforce.

    Attributes:
        backend: ``bwrap``, ``landlock`` or None (commands run unsandboxed).
        landlock_abi: The kernel's Landlock ABI version (0: none).
        bwrap_problem: Why bubblewrap is not used, when it is not.

    """

    backend: Backend | None
    landlock_abi: int
    bwrap_problem: str = ""

    def notice(self) -> str | None:
        """The one-line notice for the user when the sandbox is missing or partial, else None."""
        if self.backend is None:
            return (
                f"no OS sandbox for shell commands ({self.bwrap_problem}; no Landlock in this kernel): "
                "commands run unsandboxed and only the permission rules apply; "
                "install bubblewrap (apt-get install bubblewrap) to sandbox them"
            )
        if self.backend == "landlock":
            from nestor.tools.sandbox.seccomp import IP_SOCKETS, socket_filter

            closed = self.landlock_abi >= LANDLOCK_NETWORK_ABI or socket_filter(IP_SOCKETS) is not None
            network = "" if closed else ", and cannot block the network (Landlock ABI < 4)"
            return (
                f"shell sandbox: Landlock ({self.bwrap_problem}): commands can write the project's "
                f".git (hooks and config included) and /dev/shm{network}"
            )
        return None


_cached: Availability | None = None


async def detect(*, refresh: bool = False) -> Availability:
    """Find the backend once per process (``refresh`` looks again), off the event loop."""
    if _cached is None or refresh:
        return await asyncio.to_thread(detect_blocking, refresh=refresh)
    return _cached


def detect_blocking(*, refresh: bool = False) -> Availability:
    """:func:`detect` for code that runs in a thread of its own (a probe costs ~15 ms, once)."""
    global _cached
    if _cached is None or refresh:
        from nestor.tools.sandbox.landlock_exec import abi_version

        problem = bwrap_problem()
        abi = abi_version()
        backend: Backend | None = "bwrap" if not problem else "landlock" if abi >= 1 else None
        _cached = Availability(backend, abi, problem)
    return _cached


def bwrap_problem(bwrap: str = "bwrap") -> str:
    """Why ``bwrap`` cannot sandbox here ("" when it can): missing, or no namespaces allowed."""
    path = find_program(bwrap) if not os.path.isabs(bwrap) else bwrap
    if path is None:
        return "bubblewrap is not installed"
    try:
        done = subprocess.run(
            [path, *BASE_OPTIONS, "--ro-bind", "/", "/", "true"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap cannot start: {getattr(exc, 'strerror', None) or exc}"
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        return "bubblewrap cannot create namespaces" + (f" ({reason[-1]})" if reason else "")
    return ""
