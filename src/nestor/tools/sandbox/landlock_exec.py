"""Landlock rulesets, and a launcher: ``python landlock_exec.py [--rw PATH]... [--no-tcp] -- CMD...``.

Writing, creating, removing and renaming files is denied everywhere except beneath the ``--rw``
paths; reading and executing stay allowed. ``--no-tcp`` also denies TCP bind and connect, which
needs Landlock ABI 4 (Linux 6.7); on an older kernel the launcher refuses rather than run the
command with the network open. The ruleset is applied to this process, which then execs ``CMD``:
the command and everything it starts inherit it and cannot drop it.

The bash tool builds the ruleset in its own process and applies it in the child between fork and
exec (:func:`restrict_self`), which costs no interpreter start-up; the launcher does the same for
a command run by hand. Only the standard library is imported, so ``python -I -S`` can run it.
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys

_SYS_CREATE_RULESET = 444  # the same number on every architecture (added after the unified table)
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

_WRITE_FILE = 1 << 1
_REMOVE_DIR = 1 << 4
_REMOVE_FILE = 1 << 5
_MAKE_CHAR = 1 << 6
_MAKE_DIR = 1 << 7
_MAKE_REG = 1 << 8
_MAKE_SOCK = 1 << 9
_MAKE_FIFO = 1 << 10
_MAKE_BLOCK = 1 << 11
_MAKE_SYM = 1 << 12
_REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3
_FILE_RIGHTS = _WRITE_FILE | _TRUNCATE
_NET_BIND_TCP = 1 << 0  # ABI 4
_NET_CONNECT_TCP = 1 << 1

EXIT_SANDBOX_FAILED = 125
"""The exit status when the sandbox cannot be set up (the command never ran)."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = (("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64))


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


class LandlockError(Exception):
    """The kernel refused to set up the ruleset."""


_loaded: list[ctypes.CDLL] = []


def _libc() -> ctypes.CDLL:
    # Loaded, and both functions looked up, once: a child between fork and exec must not call
    # dlopen or dlsym, whose lock another thread of the parent may have held at the fork.
    if not _loaded:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        libc.prctl.restype = ctypes.c_int
        _loaded.append(libc)
    return _loaded[0]


def abi_version() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is missing or disabled."""
    result = _libc().syscall(
        _SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION)
    )
    return max(int(result), 0)


def _write_rights(abi: int) -> int:
    rights = (
        _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE_CHAR | _MAKE_DIR | _MAKE_REG
        | _MAKE_SOCK | _MAKE_FIFO | _MAKE_BLOCK | _MAKE_SYM
    )  # fmt: skip
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    return rights


def _check(result: int, what: str) -> int:
    if result < 0:
        raise LandlockError(f"{what}: {os.strerror(ctypes.get_errno())}")
    return result


def build_ruleset(writable: list[str], *, deny_tcp: bool) -> int:
    """A ruleset allowing writes only beneath ``writable`` (no TCP if ``deny_tcp``); returns its fd.

    Building it restricts nothing: :func:`restrict_self` applies it, in the process to confine.
    The fd is close-on-exec; the caller closes it.

    Raises:
        LandlockError: Landlock is unavailable, too old for ``deny_tcp``, or refused a rule.

    """
    abi = abi_version()
    if abi < 1:
        raise LandlockError("Landlock is not available in this kernel")
    if deny_tcp and abi < 4:
        raise LandlockError(f"Landlock ABI {abi} cannot restrict the network (needs ABI 4, Linux 6.7)")
    libc = _libc()
    handled = _write_rights(abi)
    attr = _RulesetAttr(handled, _NET_BIND_TCP | _NET_CONNECT_TCP if deny_tcp else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 4 else ctypes.sizeof(ctypes.c_uint64)
    ruleset = _check(
        libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0), "create"
    )
    try:
        for path in writable:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
                rule = _PathBeneathAttr(handled if is_dir else handled & _FILE_RIGHTS, fd)
                _check(libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0), path)
            finally:
                os.close(fd)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def restrict_self(ruleset: int) -> None:
    """Confine this process, and everything it starts from now on, to ``ruleset``.

    Safe to run between fork and exec (``preexec_fn``): two system calls through a libc handle
    loaded before the fork, nothing else.

    Raises:
        LandlockError: The kernel refused.

    """
    libc = _libc()
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _check(libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0), "restrict_self")


def restrict(writable: list[str], *, deny_tcp: bool) -> None:
    """Build the ruleset (see :func:`build_ruleset`) and confine this process to it."""
    ruleset = build_ruleset(writable, deny_tcp=deny_tcp)
    try:
        restrict_self(ruleset)
    finally:
        os.close(ruleset)


def main(args: list[str]) -> int:
    """Parse ``args``, restrict this process and exec the command; returns only on failure."""
    writable: list[str] = []
    deny_tcp = False
    while args and args[0] != "--":
        option, *args = args
        if option == "--rw" and args:
            path, *args = args
            writable.append(path)
        elif option == "--no-tcp":
            deny_tcp = True
        else:
            print(f"landlock_exec: unknown option {option!r}", file=sys.stderr)
            return EXIT_SANDBOX_FAILED
    command = args[1:]
    if not command:
        print("landlock_exec: no command after --", file=sys.stderr)
        return EXIT_SANDBOX_FAILED
    try:
        restrict(writable, deny_tcp=deny_tcp)
        os.execvp(command[0], command)
    except (LandlockError, OSError) as error:
        print(f"landlock_exec: cannot sandbox the command: {error}", file=sys.stderr)
    return EXIT_SANDBOX_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
