"""``nestor serve``: the warm process, nestor imported once, a forked child per command.

The server imports what a command needs before its first model request (the command line, the
app, the runtime, pydantic-ai's OpenAI and Anthropic models and their SDKs), then waits on its
socket. For each connection from its own user (checked with ``SO_PEERCRED``) that names its own
installation, it forks: the child takes the caller's stdin, stdout and stderr, folder,
environment and arguments, runs the command as ``nestor`` would, and sends back its exit code.
The server runs no command itself, holds no thread and no event loop (a fork copies only the
thread that calls it), and exits after ``--idle-timeout`` seconds without a command; a child
outlives it.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import io
import os
import signal
import socket
import struct
import sys
from collections.abc import Callable
from typing import Any

from nestor.cli.warm.place import installation_identity, private_dir, socket_path
from nestor.cli.warm.protocol import STDIO, receive_request, send_line

DEFAULT_IDLE_TIMEOUT_S = 900.0
_CHILD_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD)
WARM_MODULES = (
    "nestor.cli.main",
    "nestor.cli.headless",
    "nestor.cli.acp.server",
    "nestor.cli.batch_cmd",
    "typer._adapters",
    "typer._click.decorators",
)
"""The commands' own modules; the app's are :func:`nestor.app.warm_up.warm_up`'s."""

Runner = Callable[[list[str]], int]


def serve_command(args: list[str], run: Runner) -> int:
    """``nestor serve [--idle-timeout SECONDS]``: serve this user's commands until idle."""
    if args in (["--help"], ["-h"]):
        print(
            "Usage: nestor serve [--idle-timeout SECONDS]\n\n"
            "Keep nestor imported and run `run`, `mcp serve`, `acp` and `batch` commands in\n"
            "children of this process (started on first use; NESTOR_WARM=0 turns it off).\n"
            f"Exits after SECONDS without a command (default {DEFAULT_IDLE_TIMEOUT_S:.0f})."
        )
        return 0
    idle = DEFAULT_IDLE_TIMEOUT_S
    if args:
        try:
            if len(args) != 2 or args[0] != "--idle-timeout" or float(args[1]) <= 0:
                raise ValueError
            idle = float(args[1])
        except ValueError:
            print(
                "error: nestor serve takes only --idle-timeout SECONDS (a positive number)", file=sys.stderr
            )
            return 2
    folder = private_dir()
    if folder is None:
        print("error: the runtime folder is not this user's alone (owner, mode 0700)", file=sys.stderr)
        return 1
    identity = installation_identity()
    serve(socket_path(folder, identity), identity, run, idle_timeout_s=idle)
    return 0


def serve(path: str, identity: str, run: Runner, *, idle_timeout_s: float) -> None:
    """Listen on ``path`` until idle; each accepted command runs ``run(args)`` in a forked child."""
    lock_path = path + ".lock"
    with open(lock_path, "a") as lock:
        if not _holds(lock, lock_path):
            return  # another server of this installation holds the socket
        prepare()
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
        signal.signal(signal.SIGTERM, _exit_on_signal)  # a stopped server takes its socket with it
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_mask = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(old_mask)
        listener.listen(16)
        listener.settimeout(idle_timeout_s)
        try:
            while True:
                try:
                    connection, _address = listener.accept()
                except TimeoutError:
                    return
                with connection:
                    _accept(connection, (listener.fileno(), lock.fileno()), identity, run)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            listener.close()
            # Last, and while still held: a server starting from now on locks a new file.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock_path)


def _holds(lock: io.TextIOWrapper, lock_path: str) -> bool:
    """Lock ``lock``, opened at ``lock_path``: False when another server holds it or has removed it.

    A server removes its lock file as it exits; one that opened the file before that and locks it
    after would hold a file no other server sees, so the lock counts only while the path still
    names the very file locked.
    """
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held, named = os.fstat(lock.fileno()), os.stat(lock_path)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def prepare() -> None:
    """Import and build, once, what each command it serves would import and build before its request."""
    from nestor.app.warm_up import warm_up

    warm_up()
    for module in WARM_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    from nestor.cli.main import click_command

    click_command()


def _accept(connection: socket.socket, servers_fds: tuple[int, ...], identity: str, run: Runner) -> None:
    connection.settimeout(10)
    if _peer_uid(connection) != os.getuid():
        with contextlib.suppress(OSError):
            send_line(connection, {"refused": "another user"})
        return
    try:
        request, fds = receive_request(connection)
    except (OSError, ValueError):
        return
    try:
        if request.get("identity") != identity:
            with contextlib.suppress(OSError):
                send_line(connection, {"refused": "another installation"})
            return
        if os.fork() == 0:
            _child(connection, servers_fds, request, fds, run)
    finally:
        for fd in fds:
            os.close(fd)


def _peer_uid(connection: socket.socket) -> int:
    credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", credentials)
    return uid


def _child(
    connection: socket.socket,
    servers_fds: tuple[int, ...],
    request: dict[str, Any],
    fds: list[int],
    run: Runner,
) -> None:
    """Become the command: the caller's stdio, folder, environment and arguments; never returns."""
    code = 1
    try:
        for fd in servers_fds:  # the socket and its lock stay the server's alone
            os.close(fd)
        connection.settimeout(None)
        for signum in _CHILD_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setpgid(0, 0)  # the caller forwards its signals to this group, as a terminal would
        for target, fd in zip(STDIO, fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        fds.clear()
        os.environ.clear()
        os.environ.update({str(key): str(value) for key, value in request["env"].items()})
        os.chdir(str(request["cwd"]))
        _reopen_stdio()
        sys.argv = [str(request["argv0"]), *map(str, request["args"])]
        send_line(connection, {"pid": os.getpid()})
        code = run(sys.argv[1:])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        with contextlib.suppress(OSError):
            send_line(connection, {"exit": code})
        os._exit(code)


def _reopen_stdio() -> None:
    """Text streams over the caller's descriptors, buffered as Python buffers them at start."""
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    encoding, errors = sys.stdout.encoding, sys.stdout.errors or "strict"
    sys.stdin = _text_stream(0, "rb", encoding, errors, line_buffering=False, write_through=False)
    sys.stdout = _text_stream(
        1, "wb", encoding, errors, line_buffering=os.isatty(1), write_through=unbuffered
    )
    sys.stderr = _text_stream(2, "wb", encoding, "backslashreplace", line_buffering=True, write_through=True)


def _text_stream(
    fd: int, mode: str, encoding: str, errors: str, *, line_buffering: bool, write_through: bool
) -> io.TextIOWrapper:
    binary = open(fd, mode, buffering=0 if write_through else -1, closefd=False)  # noqa: SIM115 - lives as sys.std*
    return io.TextIOWrapper(
        binary, encoding=encoding, errors=errors, line_buffering=line_buffering, write_through=write_through
    )
