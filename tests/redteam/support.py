"""Helpers of the red team's reproductions: ``nestor run`` with a user's own config, scripted calls.

Each reproduction runs the real command line in a subprocess against the scripted OpenAI server on
127.0.0.1 (as ``tests/cli`` does), with a private home, config and data dir.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.support import nestor, openai_env

MODEL = ["--model", "openai-chat:gpt-4o"]
CAREFUL_RULES = (
    'allow = ["bash(ls *)", "bash(git status*)", "bash(cat *)"]\n'
    'deny = ["bash(rm *)", "Read(secrets/**)", "edit(.env)"]'
)
"""User-level rules as a careful user writes them (the brief's example)."""


def user_config(tmp_path: Path, text: str) -> None:
    """Write ``text`` as the user's own ``config.toml`` (not the project's)."""
    config = tmp_path / "home" / ".config" / "nestor"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(text)


def user_rules(tmp_path: Path, rules: str) -> None:
    """Write ``rules`` as the ``[permissions]`` of the user's own config."""
    user_config(tmp_path, f"[permissions]\n{rules}\n")


def tool_answers(requests: list[dict[str, Any]]) -> list[str]:
    """What every tool call answered, in order: the main agent's longest request holds them all."""
    answers = [[str(m["content"]) for m in body["messages"] if m["role"] == "tool"] for body in requests]
    return max(answers, key=len) if answers else []


def run_calls(
    tmp_path: Path,
    repo: Path,
    turns: list[list[ServerToolCall]],
    *flags: str,
    env: dict[str, str] | None = None,
    timeout: float = 90,
) -> list[str]:
    """Run each list of calls as one model turn of ``nestor run FLAGS go``; return the tool answers."""
    script = [*(ServerReply(tool_calls=tuple(calls)) for calls in turns), ServerReply(text="done")]
    with ScriptedOpenAIServer(script) as server:
        run_env = openai_env(tmp_path, server) | (env or {})
        done = nestor(["run", *flags, *MODEL, "go"], cwd=repo, env=run_env, timeout=timeout)
        requests: list[dict[str, Any]] = server.requests
    assert done.returncode == 0, done.stderr
    return tool_answers(requests)


def landlock_path(tmp_path: Path) -> str:
    """A ``PATH`` whose first ``bwrap`` cannot create namespaces, so nestor falls back to Landlock."""
    fake = tmp_path / "no-bwrap"
    fake.mkdir(exist_ok=True)
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: cannot create new namespace' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    return f"{fake}{os.pathsep}{os.environ.get('PATH', '')}"


@dataclass(frozen=True)
class Bounded:
    """A run that may not end: whether it ended within its time, and what it printed."""

    ended: bool
    returncode: int | None
    stdout: str
    stderr: str


def run_bounded(args: list[str], *, cwd: Path, env: dict[str, str], within_s: float) -> Bounded:
    """Run ``python -m nestor ARGS`` in a process group of its own; kill the whole group past ``within_s``.

    A hang must not leave a child (a ripgrep blocked on a FIFO) behind the test.
    """
    process = subprocess.Popen(
        [sys.executable, "-m", "nestor", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=within_s)
        return Bounded(True, process.returncode, stdout, stderr)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        return Bounded(False, None, stdout, stderr)
