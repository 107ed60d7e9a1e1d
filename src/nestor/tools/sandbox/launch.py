"""The argv and environment that run a shell command under a backend, as a policy allows."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from nestor.tools.programs import find_program
from nestor.tools.sandbox.bwrap import bwrap_argv
from nestor.tools.sandbox.detect import LANDLOCK_NETWORK_ABI, Backend
from nestor.tools.sandbox.policy import SandboxPolicy
from nestor.tools.sandbox.seccomp import IP_SOCKETS, UNIX_SOCKETS, SeccompInstaller, socket_filter

_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")
"""Device files a command may open for writing under Landlock (bubblewrap makes its own /dev)."""


class SandboxError(Exception):
    """The sandbox cannot be set up, so the command must not run."""


@dataclass(slots=True)
class Launch:
    """A command ready to start: its argv, the variables to set, and what to remove afterwards.

    Attributes:
        argv: The program and its arguments.
        env: Variables set on top of the command's environment.
        policy: The policy the command runs under; None when it runs unsandboxed.
        private_tmp: A temp dir made for this command only, removed by :meth:`cleanup`.
        preexec: Run in the child between fork and exec (Landlock confines the child there).
        ruleset_fd: The Landlock ruleset ``preexec`` applies, closed by :meth:`cleanup`.
        planted: Files absent at the start that must not outlive the command (see
            :meth:`~nestor.tools.sandbox.policy.SandboxPolicy.planted_paths`).
        pass_fds: Descriptors the child inherits (bwrap's seccomp program), closed by :meth:`cleanup`.

    """

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict[str, str])
    policy: SandboxPolicy | None = None
    private_tmp: Path | None = None
    preexec: Callable[[], None] | None = None
    ruleset_fd: int | None = None
    planted: tuple[Path, ...] = ()
    pass_fds: tuple[int, ...] = ()

    def remove_planted(self) -> list[str]:
        """Remove the files of :attr:`planted` the command created; one note for each."""
        notes: list[str] = []
        for path in self.planted:
            if os.path.lexists(path):
                with contextlib.suppress(OSError):
                    os.unlink(path)
                notes.append(f"(sandbox: removed {path}: it would point git at another repository's config)")
        return notes

    def cleanup(self) -> None:
        """Close the ruleset and the passed descriptors, and remove the private temp dir, if any."""
        if self.ruleset_fd is not None:
            os.close(self.ruleset_fd)
            self.ruleset_fd = None
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pass_fds = ()
        if self.private_tmp is not None:
            shutil.rmtree(self.private_tmp, ignore_errors=True)
            self.private_tmp = None


def sandboxed(
    backend: Backend | None,
    policy: SandboxPolicy,
    project_root: Path,
    argv: list[str],
    *,
    landlock_abi: int = 0,
    visible: tuple[Path, ...] = (),
) -> Launch:
    """How to run ``argv`` in ``project_root`` under ``backend`` (None or mode ``off``: as is).

    ``visible`` are paths a ``read-only`` sandbox shows besides the project (bubblewrap hides
    ``/tmp``). A read-only command may not create Unix sockets (a seccomp filter), and under
    Landlock a command without network may not create IP sockets either (Landlock closes only TCP).

    Raises:
        SandboxError: The Landlock ruleset cannot be built (the command must not run).

    """
    if backend is None or not policy.enabled:
        return Launch(list(argv))
    if backend == "bwrap":
        env = {"TMPDIR": "/tmp"} if policy.mode == "read-only" else {}
        planted = policy.planted_paths(project_root)
        refused = socket_filter(UNIX_SOCKETS if policy.mode == "read-only" else frozenset())
        fds = (refused.as_fd(),) if refused is not None else ()
        bwrap = bwrap_argv(
            policy,
            project_root,
            argv,
            bwrap=find_program("bwrap") or "bwrap",
            visible=visible,
            seccomp_fd=fds[0] if fds else None,
        )
        return Launch(bwrap, env, policy, planted=planted, pass_fds=fds)
    return _landlock(policy, project_root, argv, landlock_abi)


def _landlock(policy: SandboxPolicy, project_root: Path, argv: list[str], abi: int) -> Launch:
    from nestor.tools.sandbox.landlock_exec import LandlockError, build_ruleset

    writable = [str(path) for path in policy.writable_paths(project_root)]
    writable += [device for device in _DEVICES if Path(device).exists()]
    private_tmp: Path | None = None
    env: dict[str, str] = {}
    if policy.mode == "read-only":
        # Landlock can only narrow access, not mount a fresh /tmp: the command gets its own dir.
        private_tmp = Path(tempfile.mkdtemp(prefix="nestor-sandbox-"))
        writable.append(str(private_tmp))
        env["TMPDIR"] = str(private_tmp)
    if Path("/dev/shm").is_dir():
        # Shared with every process, unlike bwrap's; but POSIX semaphores (Python's multiprocessing
        # among others) live there, and commands that cannot make one fail outright.
        writable.append("/dev/shm")
    deny_tcp = not policy.allows_network and abi >= LANDLOCK_NETWORK_ABI
    families = (UNIX_SOCKETS if policy.mode == "read-only" else frozenset()) | (
        IP_SOCKETS if not policy.allows_network else frozenset()
    )
    refused = socket_filter(families)
    try:
        ruleset = build_ruleset(writable, deny_tcp=deny_tcp)
    except (LandlockError, OSError) as error:
        if private_tmp is not None:
            shutil.rmtree(private_tmp, ignore_errors=True)
        raise SandboxError(f"Landlock: {error}") from error
    return Launch(
        list(argv),
        env,
        policy,
        private_tmp,
        preexec=_Confine(ruleset, refused.installer() if refused is not None else None),
        ruleset_fd=ruleset,
        planted=policy.planted_paths(project_root),
    )


class _Confine:
    """Applies a Landlock ruleset, then a seccomp filter, in a child between fork and exec."""

    def __init__(self, ruleset: int, seccomp: SeccompInstaller | None) -> None:
        # Looked up here: the child, between fork and exec, must not import anything.
        from nestor.tools.sandbox.landlock_exec import restrict_self

        self._restrict_self = restrict_self
        self._ruleset = ruleset
        self._seccomp = seccomp

    def __call__(self) -> None:
        self._restrict_self(self._ruleset)  # sets no_new_privs, which seccomp needs
        if self._seccomp is not None:
            self._seccomp()
