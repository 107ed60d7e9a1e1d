"""Start-up times of the real ``nestor`` command, each beside a baseline measured in the same run.

- ``nestor --version`` against a bare ``python -c pass`` (the interpreter's own start-up);
- ``nestor run`` from process start to the moment the first model request reaches a scripted
  OpenAI-compatible server on 127.0.0.1, against a process that only imports pydantic-ai's
  OpenAI model module (the floor any pydantic-ai-based tool pays before its first request).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nestor.testing import ScriptedOpenAIServer, ServerReply

RUNS = 7


def _median_seconds(command: list[str], env: dict[str, str], cwd: Path) -> float:
    samples: list[float] = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(command, env=env, cwd=cwd, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def version_times(env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Median seconds of ``nestor --version`` and of ``python -c pass``."""
    nestor = _median_seconds([sys.executable, "-m", "nestor", "--version"], env, cwd)
    bare = _median_seconds([sys.executable, "-c", "pass"], env, cwd)
    return nestor, bare


def first_request_times(env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Median seconds from ``nestor run`` start to its first model request, and the import floor."""
    first_arrival: dict[int, float] = {}
    run_index = 0

    def answer(_request: dict[str, Any]) -> ServerReply:
        # Each run sends its prompt, then the new session's title request: only the first counts.
        first_arrival.setdefault(run_index, time.time())
        return ServerReply(text="ok")

    samples: list[float] = []
    with ScriptedOpenAIServer([answer] * (2 * RUNS)) as server:
        run_env = env | {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}
        for index in range(RUNS):
            run_index = index
            started = time.time()
            subprocess.run(
                [sys.executable, "-m", "nestor", "run", "--model", "openai-chat:gpt-4o", "hi"],
                env=run_env,
                cwd=cwd,
                check=True,
                capture_output=True,
            )
            samples.append(first_arrival[index] - started)
    floor = _median_seconds([sys.executable, "-c", "import pydantic_ai.models.openai"], env, cwd)
    return statistics.median(samples), floor


def main() -> None:
    """Print both measurements with their baselines and targets."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env |= {"NESTOR_HOME": str(root / "data"), "HOME": str(root), "XDG_CONFIG_HOME": str(root / "cfg")}
        project = root / "project"
        project.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
        version, bare = version_times(env, project)
        first, floor = first_request_times(env, project)
    print(f"Start-up (median of {RUNS} runs)")
    print(f"  nestor --version            {version * 1000:7.0f} ms   target < 150 ms")
    print(f"    python -c pass            {bare * 1000:7.0f} ms   ratio {version / bare:.2f}")
    print(f"  nestor run -> 1st request   {first * 1000:7.0f} ms   target < 400 ms")
    print(f"    import pydantic_ai.models.openai alone {floor * 1000:7.0f} ms   ratio {first / floor:.2f}")


if __name__ == "__main__":
    main()
