"""The real ``nestor`` console script in a pseudo-terminal: the agent tree while three explore agents run.

The screen is read through pyte, a terminal emulator, so the test sees what a user would: the
rows of the terminal after Textual's redraws, not its escape sequences.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import select
import struct
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

import pyte
import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply
from tests.cli.support import git_repo, nestor_json, openai_env
from tests.cli.tui.support import EXPLORED, three_explorers
from tests.server_routes import router

COLUMNS, ROWS = 120, 36
NAMES = EXPLORED
# Each explore agent: one grep, two requests of 1,000 + 100 tokens at gpt-4o's prices.
TOTALS = re.compile(r"done · 1 tool · [\d.]+s · 2\.2k tok · \$0\.0070")


class Terminal:
    """A pseudo-terminal running one process, its screen emulated."""

    def __init__(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: nestor, with the pty as its controlling terminal
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.stream = pyte.ByteStream(self.screen)
        self.seen = bytearray()

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def read(self, wait: float = 0.1) -> None:
        ready, _, _ = select.select([self.fd], [], [], wait)
        if ready:
            with contextlib.suppress(OSError):
                data = os.read(self.fd, 65536)
                self.seen.extend(data)
                self.stream.feed(data)

    def until(self, predicate: Callable[[str], bool], what: str, within_s: float = 60) -> str:
        deadline = time.monotonic() + within_s
        while not predicate(self.text()):
            assert time.monotonic() < deadline, f"never saw {what}; the screen:\n{self.text()}"
            self.read()
        return self.text()

    def write(self, data: bytes) -> None:
        os.write(self.fd, data)

    def wait(self, within_s: float = 30) -> int:
        deadline = time.monotonic() + within_s
        while (done := os.waitpid(self.pid, os.WNOHANG)) == (0, 0):
            assert time.monotonic() < deadline, f"nestor did not exit; the screen:\n{self.text()}"
            self.read(0.05)
        return os.waitstatus_to_exitcode(done[1])


def agent_rows(screen: str, name: str) -> tuple[str, str] | None:
    """The two rows of the agent tree's node ``explore · find NAME``: its title and its counters."""
    rows = screen.splitlines()
    for index, row in enumerate(rows[:-1]):
        if f"explore · find {name}" in row:
            return row, rows[index + 1]
    return None


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo", {f"src/{name}.py": f"{name} = 1\n" for name in NAMES})


def test_the_tree_shows_three_explore_agents_while_they_run_then_their_totals(
    repo: Path, tmp_path: Path
) -> None:
    nestor = str(Path(sys.executable).parent / "nestor")
    with ScriptedOpenAIServer(router(three_explorers("All three were **found**.", delay=2.0))) as server:
        env = {
            **openai_env(tmp_path, server),
            "TERM": "xterm-256color",
            "COLUMNS": str(COLUMNS),
            "LINES": str(ROWS),
        }
        terminal = Terminal([nestor, "--model", "openai-chat:gpt-4o"], cwd=repo, env=env)
        try:
            terminal.until(lambda screen: "Enter sends" in screen, "the TUI")
            terminal.write(b"USER: find the three\r")

            def all_running(screen: str) -> bool:
                rows = [agent_rows(screen, name) for name in NAMES]
                return all(row is not None and "running ·" in row[1] for row in rows)

            terminal.until(all_running, "three explore agents running")

            def all_done(screen: str) -> bool:
                rows = [agent_rows(screen, name) for name in NAMES]
                return all(row is not None and TOTALS.search(row[1]) for row in rows)

            done = terminal.until(all_done, "three explore agents done with their totals")
            terminal.until(lambda screen: "All three were found." in screen, "the final answer")
            terminal.write(b"\x04")  # Ctrl-D exits
            code = terminal.wait()
        finally:
            with contextlib.suppress(OSError):
                os.close(terminal.fd)
    assert code == 0, terminal.text()
    assert b"resume this session with: nestor --resume ses_" in terminal.seen  # printed after the UI closed
    for name in NAMES:
        row = agent_rows(done, name)
        assert row is not None and f"✓ explore · find {name}" in row[0]


def test_closing_the_terminal_stops_the_tui_and_its_run(repo: Path, tmp_path: Path) -> None:
    nestor = str(Path(sys.executable).parent / "nestor")
    with ScriptedOpenAIServer(router({"USER": [ServerReply(text="too late", delay=30)]})) as server:
        env = {**openai_env(tmp_path, server), "TERM": "xterm-256color"}
        terminal = Terminal([nestor, "--model", "openai-chat:gpt-4o"], cwd=repo, env=env)
        terminal.until(lambda screen: "Enter sends" in screen, "the TUI")
        terminal.write(b"USER: wait\r")
        terminal.until(lambda screen: "working · Esc stops" in screen, "the run going on")
        os.close(terminal.fd)  # the terminal goes away: the kernel sends SIGHUP to nestor
        deadline = time.monotonic() + 30
        while (done := os.waitpid(terminal.pid, os.WNOHANG)) == (0, 0):
            assert time.monotonic() < deadline, "nestor did not exit after its terminal closed"
            time.sleep(0.05)
    assert os.waitstatus_to_exitcode(done[1]) == 129
    listed = nestor_json(["sessions", "list", "--json"], cwd=repo, env=env)
    assert listed[0]["status"] == "cancelled"  # the run was stopped, its history stored
