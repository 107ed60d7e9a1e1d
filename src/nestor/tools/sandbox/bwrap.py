"""The bubblewrap backend: the argv that runs a command under ``bwrap`` for a policy."""

from __future__ import annotations

from pathlib import Path

from nestor.tools.sandbox.policy import SandboxPolicy

BASE_OPTIONS = ("--unshare-all", "--cap-drop", "ALL", "--die-with-parent")
"""Always given. Without ``--cap-drop ALL`` a command run as root keeps the capabilities to remount
``/`` read-write inside its namespace; ``--die-with-parent`` ends the sandbox when nestor stops
``bwrap`` (a timeout, a cancellation)."""


def bwrap_argv(
    policy: SandboxPolicy,
    project_root: Path,
    argv: list[str],
    *,
    bwrap: str = "bwrap",
    visible: tuple[Path, ...] = (),
    seccomp_fd: int | None = None,
) -> list[str]:
    """The argv running ``argv`` in ``project_root`` under ``bwrap``, as ``policy`` allows.

    The whole filesystem is mounted read-only, with a fresh ``/dev`` and ``/proc``. ``read-only``
    mode gets a private, empty ``/tmp`` (the project, its repositories and ``visible`` stay
    visible); ``workspace-write`` mode binds the writable paths back read-write (parents first), the
    pinned paths onto themselves, then the protected paths read-only. ``seccomp_fd`` is a filter
    program bwrap loads before it runs the command (:mod:`~nestor.tools.sandbox.seccomp`).
    """
    options = [bwrap, *BASE_OPTIONS]
    if policy.allows_network:
        options.append("--share-net")
    options += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if policy.mode == "read-only":
        # The project may lie under /tmp: bound again so that the fresh /tmp does not hide it.
        options += ["--tmpfs", "/tmp"]
        shown = dict.fromkeys((project_root, *policy.visible_paths(project_root), *visible))
        for path in sorted(shown, key=lambda path: len(path.parts)):
            options += ["--ro-bind", str(path), str(path)]
    for path in sorted(policy.writable_paths(project_root), key=lambda path: len(path.parts)):
        options += ["--bind", str(path), str(path)]
    for path in policy.pinned_paths(project_root):
        options += ["--bind", str(path), str(path)]
    for path in policy.protected_paths(project_root):
        options += ["--ro-bind", str(path), str(path)]
    if seccomp_fd is not None:
        options += ["--seccomp", str(seccomp_fd)]
    return [*options, "--chdir", str(project_root), "--", *argv]
