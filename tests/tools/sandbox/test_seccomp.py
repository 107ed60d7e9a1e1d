"""The seccomp filter: read-only agents reach no Unix socket; under Landlock, no network means no UDP."""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from nestor.tools.base import ToolContext
from nestor.tools.sandbox.detect import Backend
from nestor.tools.sandbox.policy import SandboxPolicy
from nestor.tools.sandbox.seccomp import IP_SOCKETS, UNIX_SOCKETS, socket_filter
from tests.tools.test_sandbox import backend, run

__all__ = ["backend"]  # the fixture, parametrized over bubblewrap and Landlock

_INTERPRETER = os.path.realpath(sys.executable)


class UnixListener:
    """A Unix socket outside /tmp (where the red team put it) that records what it receives."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.received = b""
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(path))
        self._server.listen()
        self._server.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._server.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(1)
                with contextlib.suppress(TimeoutError):
                    self.received += connection.recv(1024)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._server.close()


@pytest.fixture
def listener() -> Iterator[UnixListener]:
    # Not under /tmp: bubblewrap's read-only sandbox mounts a fresh /tmp, which would hide it
    # for reasons other than the filter.
    directory = Path.home() / f".nestor-test-sockets-{os.getpid()}"
    directory.mkdir(exist_ok=True)
    server = UnixListener(directory / "agent.sock")
    try:
        yield server
    finally:
        server.close()
        server.path.unlink(missing_ok=True)
        directory.rmdir()


def send_command(path: Path) -> str:
    code = (
        f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({str(path)!r}); "
        "s.sendall(b'SECRET'); print('sent')"
    )
    return f"{_INTERPRETER} -c {shlex.quote(code)}"


async def test_a_read_only_agent_reaches_no_unix_socket(
    backend: Backend, ctx: ToolContext, listener: UnixListener
) -> None:
    # Case 8 of the second red team: ssh-agent, docker.sock and D-Bus were reachable.
    result = await run(send_command(listener.path), ctx, SandboxPolicy.read_only(), backend)

    assert "sent" not in result.content
    assert "Permission denied" in result.content
    assert listener.received == b""


async def test_a_workspace_write_agent_may_reach_a_unix_socket(
    backend: Backend, ctx: ToolContext, listener: UnixListener
) -> None:
    # As SECURITY.md says: test suites and dev servers use Unix sockets; only read-only agents lose them.
    result = await run(send_command(listener.path), ctx, SandboxPolicy(), backend)

    assert result.content == "sent"


async def test_pipes_between_processes_still_work_in_a_read_only_sandbox(
    backend: Backend, ctx: ToolContext
) -> None:
    code = "import socket; a, b = socket.socketpair(); a.sendall(b'x'); print(b.recv(1).decode())"

    result = await run(f"{_INTERPRETER} -c {shlex.quote(code)}", ctx, SandboxPolicy.read_only(), backend)

    assert result.content == "x"


async def test_without_network_no_udp_leaves_the_sandbox(backend: Backend, ctx: ToolContext) -> None:
    # Landlock closes only TCP; the filter closes UDP too. bubblewrap has no network to leave.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
        receiver.bind(("127.0.0.1", 0))
        receiver.settimeout(0.5)
        port = receiver.getsockname()[1]
        code = (
            "import socket; "
            f"socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'leak', ('127.0.0.1', {port}))"
        )

        await run(f"{_INTERPRETER} -c {shlex.quote(code)}", ctx, SandboxPolicy(network=False), backend)

        with pytest.raises(TimeoutError):
            receiver.recv(16)


def test_the_filter_is_built_for_this_machine_and_refuses_only_what_it_names() -> None:
    unix = socket_filter(UNIX_SOCKETS)
    assert unix is not None
    assert socket_filter(UNIX_SOCKETS, machine="riscv64") is None
    assert socket_filter(frozenset()) is None
    ip = socket_filter(IP_SOCKETS)
    assert ip is not None and len(ip.program) > len(unix.program)
    code = (
        "import socket\n"
        "for family in (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6):\n"
        "    try:\n"
        "        socket.socket(family).close(); print(family.name, 'ok')\n"
        "    except OSError as error:\n"
        "        print(family.name, error.errno)\n"
    )
    installer = unix.installer()
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def confine() -> None:
        libc.prctl(38, 1, 0, 0, 0)  # no_new_privs, which an unprivileged seccomp filter needs
        installer()

    done = subprocess.run(
        [_INTERPRETER, "-c", code], preexec_fn=confine, capture_output=True, text=True, check=True
    )

    assert done.stdout.splitlines() == ["AF_UNIX 13", "AF_INET ok", "AF_INET6 ok"]


def test_io_uring_is_refused_where_the_filter_is_installed() -> None:
    # An io_uring makes sockets without socket() (IORING_OP_SOCKET): the third red team's way past.
    unix = socket_filter(UNIX_SOCKETS)
    assert unix is not None
    installer = unix.installer()
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def confine() -> None:
        libc.prctl(38, 1, 0, 0, 0)
        installer()

    code = (
        "import ctypes, ctypes.util\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "params = ctypes.create_string_buffer(120)\n"
        "print(libc.syscall(425, 8, params), ctypes.get_errno())\n"
    )
    done = subprocess.run(
        [_INTERPRETER, "-c", code], preexec_fn=confine, capture_output=True, text=True, check=True
    )
    free = subprocess.run([_INTERPRETER, "-c", code], capture_output=True, text=True, check=True)

    assert done.stdout.split() == ["-1", "38"]  # ENOSYS, as on a kernel without io_uring
    assert free.stdout.split()[0] != "-1" or free.stdout.split()[1] != "38"
