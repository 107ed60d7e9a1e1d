"""A closed terminal (SIGHUP) or a ``kill`` (SIGTERM) stops nestor like Ctrl-C: commands die, history stays.

Real subprocesses of the CLI get real signals while a scripted model's tool call runs a long
``sleep`` in bash, with the sandbox off (with bubblewrap, ``--die-with-parent`` would end the command
anyway). The ``sleep`` is found in ``/proc`` by its unique argument.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.support import git_repo, nestor_json, openai_env
from tests.processes import find_command, is_running, wait_for_group_to_die

MODEL = ["--model", "openai-chat:gpt-4o"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo", {"README.md": "# demo\n"})


def _sleep_script(started: Path, token: str) -> list[ServerReply]:
    command = f"echo started > {started}; sleep {token}"
    return [ServerReply(tool_calls=(ServerToolCall("bash", {"command": command}),))]


def _env(tmp_path: Path, server: ScriptedOpenAIServer) -> dict[str, str]:
    env = {**openai_env(tmp_path, server), "TERM": "xterm"}
    config = Path(env["XDG_CONFIG_HOME"]) / "nestor" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[sandbox]\nmode = "off"\n', encoding="utf-8")
    return env


def _find_sleep(token: str, started: Path, alive: Callable[[], bool]) -> int:
    """The host pid of ``sleep TOKEN``, once the command started."""
    return find_command(["sleep", token], started, alive)


def _group_of(pid: int) -> int:
    return os.getpgid(pid)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGHUP, 129), (signal.SIGTERM, 143)])
def test_run_stops_on_a_signal_kills_the_command_and_stores_the_turn(
    repo: Path, tmp_path: Path, cleanup_pids: list[int], signum: signal.Signals, code: int
) -> None:
    started, token = tmp_path / "started", f"120.{os.getpid()}{signum}"
    with ScriptedOpenAIServer(_sleep_script(started, token)) as server:
        env = _env(tmp_path, server)
        process = subprocess.Popen(
            [sys.executable, "-m", "nestor", "run", "-o", "json", "--yolo", *MODEL, "wait"],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        sleep = _find_sleep(token, started, lambda: process.poll() is None)
        group = _group_of(sleep)
        cleanup_pids.append(group)
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr
    assert wait_for_group_to_die(group) == [] and not is_running(sleep)
    outcome = json.loads(stdout.splitlines()[-1])
    assert outcome["stop_reason"] == "cancelled"
    shown = nestor_json(["sessions", "show", outcome["session_id"], "--json"], cwd=repo, env=env)
    last = shown["messages"][-1]["message"]["parts"][0]
    assert last["part_kind"] == "tool-return" and last["outcome"] == "interrupted"
    assert shown["session"]["status"] == "cancelled"


def _read_until(fd: int, wanted: bytes, seen: bytearray, *, within_s: float = 60) -> None:
    deadline = time.monotonic() + within_s
    while wanted not in seen:
        assert time.monotonic() < deadline, f"never saw {wanted!r}; saw {bytes(seen[-500:])!r}"
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            with contextlib.suppress(OSError):
                seen.extend(os.read(fd, 65536))


def test_closing_the_repl_terminal_stops_the_run_and_kills_the_command(
    repo: Path, tmp_path: Path, cleanup_pids: list[int]
) -> None:
    started, token = tmp_path / "started", f"120.{os.getpid()}0"
    with ScriptedOpenAIServer(_sleep_script(started, token)) as server:
        env = _env(tmp_path, server)
        pid, fd = pty.fork()
        if pid == 0:  # the child: nestor's REPL on the pty, which is its controlling terminal
            os.chdir(repo)
            os.execve(sys.executable, [sys.executable, "-m", "nestor", "--plain", "--yolo", *MODEL], env)
        seen = bytearray()
        try:
            _read_until(fd, b"new session ses_", seen)
            os.write(fd, b"wait\r")
            sleep = _find_sleep(token, started, lambda: os.waitpid(pid, os.WNOHANG) == (0, 0))
            group = _group_of(sleep)
            cleanup_pids.append(group)
        finally:
            os.close(fd)  # the terminal goes away: the kernel sends SIGHUP to nestor
        deadline = time.monotonic() + 30
        while (done := os.waitpid(pid, os.WNOHANG)) == (0, 0):
            assert time.monotonic() < deadline, "nestor did not exit after its terminal closed"
            time.sleep(0.05)
    assert os.waitstatus_to_exitcode(done[1]) == 129
    assert wait_for_group_to_die(group) == [] and not is_running(sleep)
    listed = nestor_json(["sessions", "list", "--json"], cwd=repo, env=env)
    assert listed[0]["status"] == "cancelled"
    shown = nestor_json(["sessions", "show", listed[0]["id"], "--json"], cwd=repo, env=env)
    last = shown["messages"][-1]["message"]["parts"][0]
    assert last["part_kind"] == "tool-return" and last["outcome"] == "interrupted"
