"""OpenCode (``opencode-ai`` from the npm registry) as a peer harness, on the shared llama-cpp-python server.

OpenCode installs into a folder of its own (``<work_dir>/npm/opencode``, ``npm install --prefix``;
the platform's binary comes in one of the package's own optional dependencies) and runs headless:
``opencode run --format json --auto`` with one message, every permission approved (as ``--yes``
does for the other peers). Its config (written into the peer's own home, pointed at by
``OPENCODE_CONFIG``) declares one OpenAI-compatible provider, the counting proxy in front of the
model server, with the eval's context window; the update check, sharing and the models.dev list
are switched off, so nothing leaves loopback.

The answer is the text of OpenCode's last step, read from its JSON events
(:func:`extract_opencode_answer`).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evals.harnesses.base import EvalContext, HarnessResult
from evals.harnesses.llama_server import (
    KILL_GRACE_S,
    LlamaServer,
    acquire_server,
    new_run_dir,
    peer_environment,
    release_server,
    write_run_log,
)
from evals.processes import run_in_group
from evals.tasks import Task

OPENCODE_VERSION = "1.18.33"
PROVIDER = "llama"
MAX_OUTPUT_TOKENS = 1024


class OpenCodeHarness:
    """Runs each task as one headless ``opencode run`` on the shared local model server."""

    name = "opencode"

    def __init__(self) -> None:
        self._context: EvalContext | None = None
        self._server: LlamaServer | None = None
        self._opencode: Path | None = None
        self._home = Path()
        self._env: dict[str, str] = {}

    def prepare(self, context: EvalContext) -> None:
        """Install OpenCode into its folder (once) and start or join the model server."""
        folder = context.work_dir / "npm" / "opencode"
        self._home = context.work_dir / "homes" / self.name
        self._env = peer_environment(
            folder,
            home=self._home,
            extra={
                "OPENCODE_CONFIG": str(self._home / "opencode.json"),
                "OPENCODE_DISABLE_AUTOUPDATE": "1",
                "OPENCODE_DISABLE_MODELS_FETCH": "1",
                "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
                "OPENCODE_DISABLE_SHARE": "1",
            },
        )
        self._opencode = ensure_npm_package(
            folder,
            f"opencode-ai@{OPENCODE_VERSION}",
            binary="opencode",
            version=OPENCODE_VERSION,
            log=context.work_dir / "logs" / "opencode-install.log",
        )
        self._context = context
        self._server = acquire_server(context)

    def run(self, task: Task, workspace: Path) -> HarnessResult:
        """Run ``opencode run <prompt>`` in ``workspace`` until it exits, or kill it at the budget."""
        if self._context is None or self._server is None or self._opencode is None:
            raise RuntimeError("OpenCodeHarness.run before prepare")
        context, server = self._context, self._server
        (self._home / "opencode.json").write_text(
            json.dumps(opencode_config(server.base_url, server.model_name, context.context_window), indent=2),
            encoding="utf-8",
        )
        run_dir = new_run_dir(context.work_dir, self.name, task.id)
        command = [
            str(self._opencode),
            *("run", "--format", "json", "--auto", "-m", f"{PROVIDER}/{server.model_name}", task.prompt),
        ]
        server.reset_usage()
        log = run_dir / "output.log"
        limit = task.timeout_s + KILL_GRACE_S
        finished = run_in_group(command, cwd=workspace, env=self._env, timeout_s=limit)
        write_run_log(log, command, finished)
        usage = server.usage()
        server.settle()  # a run killed at its limit leaves the model generating
        error = None
        if finished.timed_out:
            error = f"killed after {limit:g} s (budget {task.timeout_s:g} s)"
        elif finished.returncode != 0:
            error = f"opencode exited with code {finished.returncode}"
        elif usage.requests == 0:
            error = "opencode made no model request"
        return HarnessResult(
            answer=extract_opencode_answer(finished.stdout),
            seconds=finished.seconds,
            input_tokens=usage.prompt_tokens if usage.exact else None,
            output_tokens=usage.completion_tokens,
            error=error,
            log=log,
        )

    def close(self) -> None:
        """Give back the model server (the last harness to close stops it)."""
        if self._server is not None:
            self._server = None
            release_server()


def opencode_config(base_url: str, model: str, context_window: int) -> dict[str, Any]:
    """OpenCode's config: one OpenAI-compatible provider (the counting proxy) and its one model."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "local llama.cpp",
                "options": {"baseURL": base_url, "apiKey": "local"},
                "models": {
                    model: {"name": model, "limit": {"context": context_window, "output": MAX_OUTPUT_TOKENS}}
                },
            }
        },
        "model": f"{PROVIDER}/{model}",
        "share": "disabled",
        "autoupdate": False,
    }


def extract_opencode_answer(stdout: str) -> str:
    """The text of the last step of ``opencode run --format json``'s events (its final reply).

    Each line is one event; a step's text comes as ``text`` events between ``step_start`` and
    ``step_finish``. The answer is the text of the last step that has any.
    """
    steps: list[list[str]] = [[]]
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind == "step_start":
            steps.append([])
        elif kind == "text":
            part = event.get("part") or {}
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str):
                steps[-1].append(text)
    said = [step for step in steps if "".join(step).strip()]
    return "".join(said[-1]).strip() if said else ""


def ensure_npm_package(
    folder: Path, spec: str, *, binary: str, version: str, log: Path, env: Mapping[str, str] | None = None
) -> Path:
    """Make ``folder`` hold the npm package ``spec`` (``npm install --prefix``), reusing it when it does.

    ``env`` is what npm and the binary's ``--version`` run with (this process's when None): a package
    needing a newer Node than the machine's is checked with the Node it will run on.

    Returns:
        The package's ``binary`` in ``folder/node_modules/.bin``.

    Raises:
        RuntimeError: npm failed, or the binary does not report ``version`` afterwards.

    """
    path = folder / "node_modules" / ".bin" / binary
    if _reports(path, version, env):
        return path
    folder.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        command = ["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund", spec]
        out.write(f"\n$ {' '.join(command)}\n".encode())
        out.flush()
        done = subprocess.run(
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, check=False, env=env
        )
    if done.returncode != 0 or not _reports(path, version, env):
        raise RuntimeError(f"installing {spec} with npm failed (exit {done.returncode}); see {log}")
    return path


def _reports(path: Path, version: str, env: Mapping[str, str] | None = None) -> bool:
    if not path.exists():
        return False
    try:
        done = subprocess.run(
            [str(path), "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and version in done.stdout
