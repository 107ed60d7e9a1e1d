"""The argv and environment that run a shell command under a backend, as a policy allows."""

from __future__ import annotations

import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from nestor.tools.sandbox.bwrap import bwrap_argv
from nestor.tools.sandbox.detect import LANDLOCK_NETWORK_ABI, Backend
from nestor.tools.sandbox.policy import SandboxPolicy

_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")
"""Device files a command may open for writing under Landlock (bubblewrap makes its own /dev)."""


@dataclass(slots=True)
class Launch:
    """A command ready to start: its argv, the variables to set, and what to remove afterwards.

    Attributes:
        argv: The program and its arguments.
        env: Variables set on top of the command's environment.
        policy: The policy the command runs under; None when it runs unsandboxed.
        private_tmp: A temp dir made for this command only, removed by :meth:`cleanup`.

    """

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict[str, str])
    policy: SandboxPolicy | None = None
    private_tmp: Path | None = None

    def cleanup(self) -> None:
        """Remove the private temp dir, if any."""
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
) -> Launch:
    """How to run ``argv`` in ``project_root`` under ``backend`` (None or mode ``off``: as is)."""
    if backend is None or not policy.enabled:
        return Launch(list(argv))
    if backend == "bwrap":
        env = {"TMPDIR": "/tmp"} if policy.mode == "read-only" else {}
        return Launch(bwrap_argv(policy, project_root, argv), env, policy)
    return _landlock(policy, project_root, argv, landlock_abi)


def _landlock(policy: SandboxPolicy, project_root: Path, argv: list[str], abi: int) -> Launch:
    launcher = Path(__file__).with_name("landlock_exec.py")
    writable = [str(path) for path in policy.writable_paths(project_root)]
    writable += [device for device in _DEVICES if Path(device).exists()]
    private_tmp: Path | None = None
    env: dict[str, str] = {}
    if policy.mode == "read-only":
        # Landlock can only narrow access, not mount a fresh /tmp: the command gets its own dir.
        private_tmp = Path(tempfile.mkdtemp(prefix="nestor-sandbox-"))
        writable.append(str(private_tmp))
        env["TMPDIR"] = str(private_tmp)
    elif Path("/dev/shm").is_dir():
        writable.append("/dev/shm")
    options = [option for path in writable for option in ("--rw", path)]
    if not policy.allows_network and abi >= LANDLOCK_NETWORK_ABI:
        options.append("--no-tcp")
    # -I -S: no site-packages and no PYTHON* variables, so the launcher starts in a few milliseconds.
    return Launch(
        [sys.executable, "-I", "-S", str(launcher), *options, "--", *argv], env, policy, private_tmp
    )
