"""``nestor acp`` start-up: process start to the answer of ``initialize``, beside ``nestor --version``.

An editor spawns ``nestor acp`` and sends ``initialize`` at once; the target is an answer within
1 s on this machine. The client here is the SDK's own (``acp.spawn_agent_process``), the process
the real command; ``nestor --version`` (the interpreter and nestor's fast path) and the SDK's bare
import are measured in the same run, so the figures read side by side.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import acp

from startup import version_times

RUNS = 7
TARGET_S = 1.0


class _SilentClient:
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("session/request_permission")


async def _initialize_once(env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    async with acp.spawn_agent_process(
        _SilentClient(),  # pyright: ignore[reportArgumentType]  # a client that is never asked anything
        sys.executable,
        "-m",
        "nestor",
        "acp",
        env=env,
        cwd=cwd,
    ) as (conn, _process):
        await conn.initialize(protocol_version=1)
        return time.perf_counter() - started


def initialize_times(env: dict[str, str], cwd: Path) -> float:
    """Median seconds from spawning ``nestor acp`` to the answer of ``initialize``."""
    return statistics.median(asyncio.run(_initialize_once(env, cwd)) for _ in range(RUNS))


def sdk_import_time(env: dict[str, str], cwd: Path) -> float:
    """Median seconds of a process that only imports the SDK (its floor)."""
    samples: list[float] = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import acp"], env=env, cwd=cwd, check=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    """Print the time to ``initialize`` beside ``nestor --version`` and the SDK's import."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env |= {"NESTOR_HOME": str(root / "data"), "HOME": str(root), "XDG_CONFIG_HOME": str(root / "cfg")}
        env["NESTOR_WARM"] = "0"  # each run in its own process, no warm server started or used
        project = root / "project"
        project.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
        initialize = initialize_times(env, project)
        version, _bare = version_times(env, project)
        sdk = sdk_import_time(env, project)
    verdict = "ok" if initialize < TARGET_S else "OVER TARGET"
    print(f"nestor acp start-up (median of {RUNS} runs)")
    target = f"target < {TARGET_S * 1000:.0f} ms ({verdict})"
    print(f"  spawn -> initialize answered {initialize * 1000:7.0f} ms   {target}")
    print(f"    nestor --version           {version * 1000:7.0f} ms   ratio {initialize / version:.2f}")
    print(f"    python -c 'import acp'     {sdk * 1000:7.0f} ms   ratio {initialize / sdk:.2f}")


if __name__ == "__main__":
    main()
