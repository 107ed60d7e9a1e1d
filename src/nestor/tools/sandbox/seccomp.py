"""A seccomp filter that refuses to create sockets of some address families.

A read-only agent's sandbox has no network namespace to leave, but a Unix socket is a file: on a
read-only mount ``connect`` still reaches the process listening on it (an ssh-agent, the Docker
daemon, the user's D-Bus). Mounts cannot hide every such file, and seccomp cannot read the address
``connect`` is given, so the filter refuses ``socket()`` itself for the families named (``EACCES``);
``socketpair`` (pipes between a process and its children) stays allowed. io_uring, which can
make a socket without ``socket()``, is refused (``ENOSYS``) wherever the filter is installed.
Under Landlock, which closes only TCP, the same filter closes UDP and raw IP too.

The program is classic BPF, assembled here (no libseccomp): bubblewrap loads it from a file
descriptor (``--seccomp FD``), and the Landlock launcher installs it between fork and exec.
Only x86-64 (with its i386 and x32 system calls) and AArch64 (with 32-bit Arm) are known; on
other machines :func:`socket_filter` returns None and nothing is filtered.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import socket
import struct
from dataclasses import dataclass

_LD_ABS_W = 0x20
_JEQ_K = 0x15
_RET_K = 0x06
_RET_ALLOW = 0x7FFF_0000
_RET_ERRNO = 0x0005_0000
_NR_OFFSET = 0
_ARCH_OFFSET = 4
_ARG0_OFFSET = 16  # the low 32 bits of args[0]: both machines below are little-endian
_X32_SYSCALL_BIT = 0x4000_0000
_PR_SET_SECCOMP = 22
IO_URING_NRS = (425, 426, 427)
"""io_uring_setup, io_uring_enter and io_uring_register (one number on every architecture): an
io_uring makes sockets (``IORING_OP_SOCKET``) without calling ``socket()``, so a filter on
sockets refuses it too, as Docker's default seccomp profile does."""
_SECCOMP_MODE_FILTER = 2


@dataclass(frozen=True, slots=True)
class _Machine:
    arch: int  # AUDIT_ARCH_* of native system calls
    socket_nr: int
    has_x32: bool
    compat_arch: int  # AUDIT_ARCH_* of the 32-bit system calls the kernel also accepts
    compat_socket_nrs: tuple[int, ...]  # socket, and socketcall where the ABI has it


_MACHINES = {
    "x86_64": _Machine(0xC000_003E, 41, True, 0x4000_0003, (359, 102)),
    "aarch64": _Machine(0xC000_00B7, 198, False, 0x4000_0028, (281,)),
}


@dataclass(frozen=True, slots=True)
class SocketFilter:
    """A compiled filter: the BPF program's bytes, ready for ``bwrap --seccomp`` or ``prctl``."""

    program: bytes

    def as_fd(self) -> int:
        """A file descriptor to read the program from (a pipe, already written and closed)."""
        read_end, write_end = os.pipe()
        try:
            os.write(write_end, self.program)
        finally:
            os.close(write_end)
        os.set_inheritable(read_end, True)
        return read_end

    def installer(self) -> SeccompInstaller:
        """What installs the filter in a child between fork and exec."""
        return SeccompInstaller(self.program)


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


class SeccompInstaller:
    """Holds a program in memory made before a fork, and installs it in the child with ``prctl``.

    Safe between fork and exec: one system call through a libc handle loaded in the parent.
    """

    def __init__(self, program: bytes) -> None:
        """Copy ``program`` into memory the child will inherit."""
        self._buffer = ctypes.create_string_buffer(program, len(program))
        self._fprog = _SockFprog(len(program) // 8, ctypes.addressof(self._buffer))
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._libc.prctl.restype = ctypes.c_int

    def __call__(self) -> None:
        """Install the filter in this process (``no_new_privs`` must already be set).

        Raises:
            OSError: The kernel refused the filter.

        """
        if self._libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(self._fprog), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "seccomp filter refused")


def socket_filter(families: frozenset[int], machine: str | None = None) -> SocketFilter | None:
    """A filter refusing ``socket()`` for ``families`` (``socket.AF_UNIX``, ...); None if unknown here.

    32-bit (and x32) system calls may not name a family the filter can read (``socketcall``
    takes a pointer), so every socket they would create is refused.
    """
    known = _MACHINES.get(machine or platform.machine())
    if known is None or not families:
        return None
    return SocketFilter(_assemble(known, sorted(families)))


_Instruction = tuple[int, int, "str | None", "str | None"]
"""An opcode, its constant, and where a jump goes if true and if false (a label; None: the next)."""


def _assemble(machine: _Machine, families: list[int]) -> bytes:
    program: list[_Instruction] = []
    labels: dict[str, int] = {}

    def at(label: str) -> None:
        labels[label] = len(program)

    def load(offset: int) -> None:
        program.append((_LD_ABS_W, offset, None, None))

    def jump(code: int, k: int, true: str | None, false: str | None) -> None:
        program.append((code, k, true, false))

    def ret(value: int) -> None:
        program.append((_RET_K, value, None, None))

    load(_ARCH_OFFSET)
    jump(_JEQ_K, machine.arch, "native", None)
    jump(_JEQ_K, machine.compat_arch, "compat", "deny")
    at("native")
    load(_NR_OFFSET)
    for number in IO_URING_NRS:
        jump(_JEQ_K, number, "no-io-uring", None)
    if machine.has_x32:
        jump(_JEQ_K, _X32_SYSCALL_BIT | machine.socket_nr, "deny", None)
        for number in IO_URING_NRS:
            jump(_JEQ_K, _X32_SYSCALL_BIT | number, "no-io-uring", None)
    jump(_JEQ_K, machine.socket_nr, None, "allow")
    load(_ARG0_OFFSET)
    for family in families:
        jump(_JEQ_K, family, "deny", None)
    ret(_RET_ALLOW)
    at("compat")
    load(_NR_OFFSET)
    for number in IO_URING_NRS:
        jump(_JEQ_K, number, "no-io-uring", None)
    for number in machine.compat_socket_nrs:
        jump(_JEQ_K, number, "deny", None)
    at("allow")
    ret(_RET_ALLOW)
    at("deny")
    ret(_RET_ERRNO | errno.EACCES)
    at("no-io-uring")
    ret(_RET_ERRNO | errno.ENOSYS)  # as on a kernel without it: programs fall back to plain calls

    def offset(index: int, label: str | None) -> int:
        return 0 if label is None else labels[label] - index - 1

    encoded = b""
    for index, (code, k, true, false) in enumerate(program):
        encoded += struct.pack("=HBBI", code, offset(index, true), offset(index, false), k)
    return encoded


UNIX_SOCKETS = frozenset({socket.AF_UNIX})
"""What a read-only agent may not create: it could reach a listener outside its sandbox."""

IP_SOCKETS = frozenset({socket.AF_INET, socket.AF_INET6})
"""What a command without network may not create where no network namespace isolates it."""
