"""Start-up times of the real ``nestor`` command, each beside a baseline measured in the same run.

- ``nestor --version`` against a bare ``python -c pass`` (the interpreter's own start-up);
- ``nestor run "hi"`` from process start to the moment its first model request reaches a scripted
  server on 127.0.0.1 (OpenAI-compatible, and Anthropic), run in its own process
  (``NESTOR_WARM=0``) and served by the warm process (``nestor serve``), interleaved run by run,
  against a process that only imports pydantic-ai's model module of that provider (the floor any
  pydantic-ai-based tool pays before its first request without a warm process).
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nestor.testing import AnthropicReply, ScriptedAnthropicServer, ScriptedOpenAIServer, ServerReply

RUNS = 7
PROVIDERS = {
    "openai": ("openai-chat:gpt-4o", "OPENAI", "pydantic_ai.models.openai"),
    "anthropic": ("anthropic:claude-sonnet-4-5", "ANTHROPIC", "pydantic_ai.models.anthropic"),
}


def _seconds(command: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - started


def _median_seconds(command: list[str], env: dict[str, str], cwd: Path) -> float:
    return statistics.median(_seconds(command, env, cwd) for _ in range(RUNS))


def version_times(env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Median seconds of ``nestor --version`` and of ``python -c pass``."""
    nestor = _median_seconds([sys.executable, "-m", "nestor", "--version"], env, cwd)
    bare = _median_seconds([sys.executable, "-c", "pass"], env, cwd)
    return nestor, bare


class FirstRequests:
    """Scripted servers of both providers that note when each run's first request arrives."""

    def __init__(self) -> None:
        self.label = ""
        self.arrivals: dict[str, float] = {}

    def answer(self, _request: dict[str, Any]) -> ServerReply:
        """Each run sends its prompt, then the new session's title request: only the first counts."""
        self.arrivals.setdefault(self.label, time.time())
        return ServerReply(text="ok")

    def answer_anthropic(self, request: dict[str, Any]) -> AnthropicReply:
        """The same for the Messages API."""
        self.answer(request)
        return AnthropicReply(text="ok")

    def run(self, label: str, provider: str, env: dict[str, str], cwd: Path) -> float:
        """Seconds from starting ``nestor run`` on ``provider`` to its first request."""
        self.label = label
        started = time.time()
        model = PROVIDERS[provider][0]
        subprocess.run(
            [sys.executable, "-m", "nestor", "run", "--model", model, "hi"],
            env=env,
            cwd=cwd,
            check=True,
            capture_output=True,
        )
        return self.arrivals[label] - started


def start_warm_server(env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``nestor serve`` as a first command starts it, once its socket is there."""
    server = subprocess.Popen(
        [sys.executable, "-P", "-m", "nestor", "serve", "--idle-timeout", "600"],
        env=env,
        cwd="/",
        start_new_session=True,
    )
    folder = Path(env["XDG_RUNTIME_DIR"]) / "nestor"
    deadline = time.monotonic() + 180
    while not list(folder.glob("serve-*.sock")):
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("nestor serve did not start")
        time.sleep(0.1)
    return server


def first_request_times(env: dict[str, str], cwd: Path) -> dict[str, dict[str, float]]:
    """Per provider, median seconds to the first request: cold, warm, and the import floor."""
    samples: dict[str, dict[str, list[float]]] = {p: {"cold": [], "warm": [], "floor": []} for p in PROVIDERS}
    recorder = FirstRequests()
    with (
        ScriptedOpenAIServer([recorder.answer] * (10 * RUNS)) as openai,
        ScriptedAnthropicServer([recorder.answer_anthropic] * (10 * RUNS)) as anthropic,
    ):
        run_env = env | {
            "OPENAI_BASE_URL": openai.base_url,
            "OPENAI_API_KEY": "bench",
            "ANTHROPIC_BASE_URL": anthropic.base_url,
            "ANTHROPIC_API_KEY": "bench",
        }
        server = start_warm_server(run_env | {"NESTOR_WARM": "1"})
        try:
            for index in range(RUNS):
                for provider, (_model, _prefix, floor_module) in PROVIDERS.items():
                    cold = recorder.run(
                        f"cold {provider} {index}", provider, run_env | {"NESTOR_WARM": "0"}, cwd
                    )
                    warm = recorder.run(
                        f"warm {provider} {index}", provider, run_env | {"NESTOR_WARM": "1"}, cwd
                    )
                    floor = _seconds([sys.executable, "-c", f"import {floor_module}"], env, cwd)
                    samples[provider]["cold"].append(cold)
                    samples[provider]["warm"].append(warm)
                    samples[provider]["floor"].append(floor)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait()
    return {
        p: {kind: statistics.median(values) for kind, values in kinds.items()} for p, kinds in samples.items()
    }


def main() -> None:
    """Print both measurements with their baselines and targets."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runtime = root / "run"
        runtime.mkdir(mode=0o700)
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env |= {
            "NESTOR_HOME": str(root / "data"),
            "HOME": str(root),
            "XDG_CONFIG_HOME": str(root / "cfg"),
            "XDG_RUNTIME_DIR": str(runtime),
            "NESTOR_WARM": "0",
        }
        project = root / "project"
        project.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
        version, bare = version_times(env, project)
        firsts = first_request_times(env, project)
    print(f"Start-up (median of {RUNS} interleaved runs)")
    print(f"  nestor --version            {version * 1000:7.0f} ms   target < 150 ms")
    print(f"    python -c pass            {bare * 1000:7.0f} ms   ratio {version / bare:.2f}")
    for provider, times in firsts.items():
        cold, warm, floor = times["cold"], times["warm"], times["floor"]
        print(f"  nestor run -> 1st request, {provider}")
        print(f"    warm (nestor serve)       {warm * 1000:7.0f} ms   target < 400 ms")
        print(f"    own process               {cold * 1000:7.0f} ms   warm is {cold / warm:.1f}x faster")
        module = PROVIDERS[provider][2]
        print(f"    import {module} alone {floor * 1000:7.0f} ms   own process / it {cold / floor:.2f}")
        print(f"                                          warm / it {warm / floor:.2f}")


if __name__ == "__main__":
    main()
