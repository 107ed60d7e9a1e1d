"""What ``nestor run`` imports before its first model request, in its own process and served warm.

Each module named here costs start-up that a plain prompt does not need: another provider's SDK,
the UIs, the small-model harness, the editor and MCP protocols, Ray. The real command runs with
``-X importtime`` against the scripted server, which reads what the command imported so far (its
stderr, written as each import ends) when the first request arrives.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from nestor.testing import ScriptedOpenAIServer, ServerReply
from tests.cli.support import clean_env
from tests.cli.warm.support import stop_servers, warm_env, warm_server

NOT_BEFORE_FIRST_REQUEST = (
    "nestor.runtime.features.small.harness",  # only agents on a small model run it
    "nestor.providers.local.model",
    "llama_cpp",
    "anthropic",  # another provider's SDK
    "google.genai",
    "nestor.cli.tui",  # the UIs
    "textual",
    "nestor.cli.repl",
    "prompt_toolkit",
    "nestor.cli.acp",  # the editor's protocol
    "acp",
    "mcp",  # no MCP server is configured
    "pygls",  # nor a language server running
    "ray",
    "ddgs",  # the web search tool is built, not run
)
"""Modules ``nestor run`` on the openai provider must not import before its first request."""

NOT_IN_A_WARM_COMMAND = ("typer", "pydantic", "pydantic_ai", "openai", "httpx2", "rich", "nestor.app")
"""What a command served by the warm process never imports: the server's child has them."""

_IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", re.MULTILINE)


def _imported_before_first_request(env: dict[str, str], cwd: Path, stderr_file: Path) -> tuple[set[str], int]:
    seen: list[str] = []

    def answer(_request: dict[str, Any]) -> ServerReply:
        if not seen:
            seen.append(stderr_file.read_text())
        return ServerReply(text="ok")

    with ScriptedOpenAIServer([answer] * 4) as server, stderr_file.open("w") as stderr:
        command_env = env | {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "k"}
        done = subprocess.run(
            [
                sys.executable,
                "-X",
                "importtime",
                "-m",
                "nestor",
                "run",
                "--model",
                "openai-chat:gpt-4o",
                "hi",
            ],
            env=command_env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=stderr,
            timeout=120,
            check=False,
        )
    assert seen, stderr_file.read_text()[-2000:]
    return set(_IMPORTED.findall(seen[0])), done.returncode


def _offenders(imported: set[str], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(name for name in imported if any(name == f or name.startswith(f + ".") for f in forbidden))


def test_run_imports_nothing_a_prompt_does_not_need_before_its_first_request(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = clean_env(tmp_path / "home")
    imported, code = _imported_before_first_request(env, project, tmp_path / "stderr")
    assert code == 0
    assert "nestor.cli.headless" in imported  # the listing is real: it holds the command's own modules
    assert _offenders(imported, NOT_BEFORE_FIRST_REQUEST) == []


def test_a_warm_run_imports_none_of_the_heavy_modules(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = warm_env(tmp_path)
    try:
        with warm_server(env):
            imported, code = _imported_before_first_request(env, project, tmp_path / "stderr")
    finally:
        stop_servers(env)
    assert code == 0
    assert "nestor.cli.warm.client" in imported
    assert _offenders(imported, NOT_IN_A_WARM_COMMAND) == []
