"""A warm server of this installation in a test's own runtime folder, and commands run beside it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests.cli.support import clean_env


def stop_servers(env: dict[str, str]) -> None:
    """Kill every ``nestor serve`` whose runtime folder is the one of ``env`` (found through /proc)."""
    marker = f"XDG_RUNTIME_DIR={env['XDG_RUNTIME_DIR']}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            environment = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"nestor\0serve" in command and marker in environment:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


def warm_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A clean environment with the warm process on and a private runtime folder under ``tmp_path``."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    return clean_env(tmp_path / "home", NESTOR_WARM="1", XDG_RUNTIME_DIR=str(runtime), **extra)


def sockets(env: dict[str, str]) -> list[Path]:
    """The warm servers' sockets in the runtime folder of ``env``."""
    folder = Path(env["XDG_RUNTIME_DIR"]) / "nestor"
    return sorted(folder.glob("serve-*.sock")) if folder.is_dir() else []


@contextlib.contextmanager
def warm_server(
    env: dict[str, str], *command: str, idle_timeout_s: float = 120
) -> Iterator[subprocess.Popen[bytes]]:
    """``nestor serve`` (or ``command``) running until its socket appears; killed at the end."""
    argv = list(command) or [
        sys.executable,
        "-P",
        "-m",
        "nestor",
        "serve",
        "--idle-timeout",
        str(idle_timeout_s),
    ]
    server = subprocess.Popen(argv, env=env, cwd="/", start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not sockets(env):
            assert server.poll() is None, "the server ended before listening"
            assert time.monotonic() < deadline, "the server never listened"
            time.sleep(0.1)
        yield server
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def served_warm(stderr: str) -> bool:
    """Whether a command run with ``-X importtime`` was served warm: it never imported the CLI app."""
    return "import time:" in stderr and "nestor.cli.main" not in stderr
