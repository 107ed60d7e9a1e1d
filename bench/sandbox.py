"""Per-command cost of the bash tool's OS sandbox: ``bash -c true`` bare, under bwrap, under Landlock.

Each backend prepares and runs the command as the bash tool does (workspace-write policy, network
on, the project a temp dir; Landlock's ruleset is built in this process and applied between fork
and exec), interleaved with the bare command in the same run so that machine load
affects all alike. The overhead is the median sandboxed time minus the median bare time; the
target is 20 ms or less per command. The ``launcher`` row runs the same Landlock ruleset through the
stand-alone launcher script, to show what an interpreter start-up per command would cost.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nestor.tools.sandbox.detect import Backend, bwrap_problem
from nestor.tools.sandbox.landlock_exec import abi_version
from nestor.tools.sandbox.launch import sandboxed
from nestor.tools.sandbox.policy import SandboxPolicy

RUNS = 41
TARGET_MS = 20.0
COMMAND = ["bash", "-c", "true"]


def _available() -> dict[Backend, str]:
    """The backends this machine has, each with why it is missing ("" when present)."""
    return {"bwrap": bwrap_problem(), "landlock": "" if abi_version() >= 1 else "no Landlock"}


def _seconds(backend: Backend | None, project: Path) -> float:
    """Seconds to prepare and run the command as the bash tool would, under ``backend``."""
    started = time.perf_counter()
    launch = sandboxed(backend, SandboxPolicy(), project, COMMAND, landlock_abi=abi_version())
    try:
        subprocess.run(
            launch.argv, cwd=project, check=True, stdin=subprocess.DEVNULL, capture_output=True,
            preexec_fn=launch.preexec, pass_fds=launch.pass_fds,
        )  # fmt: skip
    finally:
        launch.cleanup()
    return time.perf_counter() - started


def _launcher_seconds(project: Path) -> float:
    """Seconds to run the command through the Landlock launcher script (an interpreter start-up)."""
    launcher = Path(sys.modules[abi_version.__module__].__file__ or "")
    argv = [sys.executable, "-I", "-S", str(launcher), "--rw", str(project), "--", *COMMAND]
    started = time.perf_counter()
    subprocess.run(argv, cwd=project, check=True, stdin=subprocess.DEVNULL, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    """Print the median time of each way to run the command and the sandbox's overhead."""
    available = _available()
    backends: dict[str, Backend | None] = {"bare": None}
    backends |= {backend: backend for backend, problem in available.items() if not problem}
    samples: dict[str, list[float]] = {name: [] for name in [*backends, "launcher"]}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(RUNS):
            for name, backend in backends.items():
                samples[name].append(_seconds(backend, Path(tmp)))
            if "landlock" in backends:
                samples["launcher"].append(_launcher_seconds(Path(tmp)))
    medians = {name: statistics.median(times) * 1000 for name, times in samples.items() if times}
    bare = medians["bare"]
    print(f"Shell sandbox, `bash -c true` (median of {RUNS} runs, interleaved; launcher: Landlock")
    print("through `python -I -S landlock_exec.py`, which the bash tool does not use)")
    print(f"  {'unsandboxed':<12} {bare:6.1f} ms")
    missing: dict[str, str] = {**available, "launcher": available["landlock"]}
    for backend in ("bwrap", "landlock", "launcher"):
        if backend not in medians:
            print(f"  {backend:<12} not measured: {missing[backend]}")
            continue
        overhead = medians[backend] - bare
        verdict = "within" if overhead <= TARGET_MS else "OVER"
        print(
            f"  {backend:<12} {medians[backend]:6.1f} ms   overhead {overhead:5.1f} ms per command "
            f"(x{medians[backend] / bare:.1f}; {verdict} the {TARGET_MS:.0f} ms target)"
        )


if __name__ == "__main__":
    main()
