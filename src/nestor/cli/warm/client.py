"""A command run by the warm process: connect, hand over stdio, forward signals, take its exit code.

:func:`run_warm` returns None when no server of this installation answers (or the runtime folder
is not the user's alone): the caller then runs the command itself and, once it is done, starts
a server for the next one (:func:`start_server`), so the first use pays nothing extra.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
from typing import BinaryIO

from nestor.cli.warm.place import installation_identity, private_dir, socket_path
from nestor.cli.warm.protocol import send_request

WARM_COMMANDS = (("run",), ("acp",), ("batch",), ("mcp", "serve"))
"""The commands the warm process runs: a prompt, an editor's or an MCP client's session, a batch."""

FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
EXIT_LOST = 1


def is_warm_command(args: list[str]) -> bool:
    """Whether ``args`` name a command the warm process runs."""
    return any(tuple(args[: len(command)]) == command for command in WARM_COMMANDS)


def run_warm(args: list[str]) -> int | None:
    """Run ``nestor ARGS`` in a child of the warm process; its exit code, or None if none answers."""
    folder = private_dir()
    if folder is None:
        return None
    identity = installation_identity()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(socket_path(folder, identity))
        request = {
            "identity": identity,
            "argv0": sys.argv[0],
            "args": args,
            "cwd": os.getcwd(),
            "env": dict(os.environ),
        }
        send_request(sock, request)
        replies = sock.makefile("rb")
        first = _read_line(replies)
    except OSError:
        sock.close()
        return None
    if "pid" not in first:
        sock.close()
        return None  # refused (another installation, another user) or gone: run it here
    return _follow(sock, replies, first["pid"])


def _follow(sock: socket.socket, replies: BinaryIO, pid: int) -> int:
    received: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        received.append(signum)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signum)

    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, forward)
    try:
        while True:
            try:
                reply = _read_line(replies)
            except OSError:
                reply = {}
            if not reply:
                # The child ended without its code: killed. The shell's convention, if we know why.
                return 128 + received[-1] if received else EXIT_LOST
            if "exit" in reply:
                return reply["exit"]
    finally:
        sock.close()


def _read_line(replies: BinaryIO) -> dict[str, int]:
    """One reply; ``{}`` at the end of the stream or for anything but an object of numbers."""
    line = replies.readline()
    try:
        message = json.loads(line) if line else {}
    except ValueError:
        return {}
    if not isinstance(message, dict) or not all(isinstance(value, int) for value in message.values()):
        return {}
    return message


def start_server() -> None:
    """Start ``nestor serve`` in the background, detached from this terminal and session.

    It runs from ``/`` with ``-P`` (no script folder on its import path), so that nothing in the
    folder it was started from can shadow a module it imports for every later command.
    """
    import subprocess

    if private_dir() is None:
        return
    # A server is a convenience for the next command: failing to start one costs this one nothing.
    with contextlib.suppress(OSError), open(os.devnull, "rb+") as devnull:
        subprocess.Popen(
            [sys.executable, "-P", "-m", "nestor", "serve"],
            cwd="/",
            stdin=devnull,
            stdout=devnull,
            stderr=devnull,
            start_new_session=True,
            close_fds=True,
        )
