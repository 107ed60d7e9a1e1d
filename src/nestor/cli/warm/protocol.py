"""What a command and the warm process say to each other over the socket.

A command sends one frame: its stdin, stdout and stderr as file descriptors (``SCM_RIGHTS``)
beside a 4-byte length, then that many bytes of JSON (the installation's identity, its
arguments, folder and environment). The server answers with JSON lines: ``{"refused": why}``,
or the child's ``{"pid": N}`` and at the end ``{"exit": code}``.
"""

from __future__ import annotations

import array
import json
import socket
import struct
from typing import Any

STDIO = (0, 1, 2)
_LENGTH = struct.Struct("!I")
MAX_REQUEST_BYTES = 16 * 1024 * 1024


def send_request(sock: socket.socket, request: dict[str, Any]) -> None:
    """Send ``request`` with this process's stdin, stdout and stderr."""
    body = json.dumps(request).encode(errors="surrogateescape")
    fds = array.array("i", STDIO)
    sock.sendmsg([_LENGTH.pack(len(body))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())])
    sock.sendall(body)


def receive_request(sock: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The request and the descriptors it carried (the caller closes them); ValueError if malformed."""
    fds_size = socket.CMSG_SPACE(len(STDIO) * array.array("i").itemsize)
    data, ancillary, _flags, _address = sock.recvmsg(_LENGTH.size, fds_size)
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            received = array.array("i")
            received.frombytes(payload[: len(payload) - len(payload) % received.itemsize])
            fds.extend(received)
    if len(data) != _LENGTH.size or len(fds) != len(STDIO):
        _close_all(fds)
        raise ValueError("a request carries a length and three descriptors")
    (length,) = _LENGTH.unpack(data)
    if length > MAX_REQUEST_BYTES:
        _close_all(fds)
        raise ValueError("request too large")
    body = bytearray()
    while len(body) < length:
        chunk = sock.recv(length - len(body))
        if not chunk:
            _close_all(fds)
            raise ValueError("request cut short")
        body.extend(chunk)
    request = json.loads(body.decode(errors="surrogateescape"))
    if not isinstance(request, dict):
        _close_all(fds)
        raise ValueError("a request is a JSON object")
    return request, fds


def send_line(sock: socket.socket, message: dict[str, Any]) -> None:
    """Send one JSON line."""
    sock.sendall(json.dumps(message).encode() + b"\n")


def _close_all(fds: list[int]) -> None:
    import os

    for fd in fds:
        os.close(fd)
