"""Which sandbox backend this machine can run: bubblewrap, else Landlock, else none."""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass
from typing import Literal, TypeAlias

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
            network = (
                ""
                if self.landlock_abi >= LANDLOCK_NETWORK_ABI
                else ", and cannot block the network (Landlock ABI < 4)"
            )
            return (
                f"shell sandbox: Landlock ({self.bwrap_problem}): .git/hooks, .git/config and "
                f"/dev/shm stay writable, UDP and local sockets stay open{network}"
            )
        return None


_cached: Availability | None = None


async def detect(*, refresh: bool = False) -> Availability:
    """Find the backend once per process (``refresh`` looks again)."""
    global _cached
    if _cached is None or refresh:
        from nestor.tools.sandbox.landlock_exec import abi_version

        problem = await bwrap_problem()
        abi = abi_version()
        backend: Backend | None = "bwrap" if not problem else "landlock" if abi >= 1 else None
        _cached = Availability(backend, abi, problem)
    return _cached


async def bwrap_problem(bwrap: str = "bwrap") -> str:
    """Why ``bwrap`` cannot sandbox here ("" when it can): missing, or no namespaces allowed."""
    path = shutil.which(bwrap)
    if path is None:
        return "bubblewrap is not installed"
    try:
        process = await asyncio.create_subprocess_exec(
            path,
            *BASE_OPTIONS,
            "--ro-bind",
            "/",
            "/",
            "true",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        _, error = await process.communicate()
    except OSError as exc:
        return f"bubblewrap cannot start: {exc.strerror}"
    if process.returncode != 0:
        reason = error.decode(errors="replace").strip().splitlines()
        return "bubblewrap cannot create namespaces" + (f" ({reason[-1]})" if reason else "")
    return ""
