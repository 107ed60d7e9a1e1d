"""The real ``nestor`` over a real SSH session at 80x24: an SSH server and client on 127.0.0.1.

The server does what sshd does for an interactive login: it opens a pseudo-terminal of the size the
client asked for, starts ``nestor`` on it as the session leader with the client's terminal type and
an SSH session's environment, and carries bytes and window changes between the channel and the
terminal. The client reads the screen through pyte, as in ``test_tui_e2e.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import struct
import sys
import termios
from collections.abc import Callable
from pathlib import Path

import asyncssh
import pyte
import pytest

from nestor.testing import ScriptedOpenAIServer
from tests.cli.support import git_repo, openai_env
from tests.cli.tui.support import EXPLORED, three_explorers
from tests.server_routes import router

COLUMNS, ROWS = 80, 24


def _set_size(fd: int, columns: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))


class _OpenServer(asyncssh.SSHServer):
    def begin_auth(self, username: str) -> bool:
        return False  # no authentication: the server listens on 127.0.0.1 for this test alone


class NestorOverSSH:
    """The SSH server's side: each session runs ``argv`` on a new pseudo-terminal."""

    def __init__(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> None:
        self.argv, self.cwd, self.env = argv, cwd, env
        self.exit_codes: list[int] = []

    async def session(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        """Run the command on a terminal of the client's size and type until it exits."""
        columns, rows, _, _ = process.term_size
        master, slave = pty.openpty()
        _set_size(slave, columns, rows)
        env = {
            **self.env,
            "TERM": process.term_type or "dumb",
            "SSH_CONNECTION": "127.0.0.1 50000 127.0.0.1 22",
            "SSH_TTY": os.ttyname(slave),
        }

        def controlling_terminal() -> None:  # as sshd: a new session, the terminal its controlling one
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        child = await asyncio.create_subprocess_exec(
            *self.argv,
            cwd=self.cwd,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            preexec_fn=controlling_terminal,
        )
        os.close(slave)
        loop = asyncio.get_running_loop()

        def output() -> None:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                loop.remove_reader(master)
                return
            process.stdout.write(data)

        loop.add_reader(master, output)
        pump = asyncio.create_task(self._input(process, master))
        code = await child.wait()
        pump.cancel()
        loop.remove_reader(master)
        with contextlib.suppress(OSError):
            while data := os.read(master, 65536):  # what it printed after the UI closed
                process.stdout.write(data)
        os.close(master)
        self.exit_codes.append(code)
        process.exit(code)

    async def _input(self, process: asyncssh.SSHServerProcess[bytes], master: int) -> None:
        while True:
            try:
                data = await process.stdin.read(4096)
            except asyncssh.TerminalSizeChanged as change:
                _set_size(master, change.width, change.height)
                continue
            if not data:
                return
            os.write(master, data)


class Screen:
    """The client's terminal: what the channel sent, through a terminal emulator."""

    def __init__(self, process: asyncssh.SSHClientProcess[bytes]) -> None:
        self.process = process
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.stream = pyte.ByteStream(self.screen)
        self.seen = bytearray()
        self.closed = False

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    async def until(self, predicate: Callable[[str], bool], what: str, within_s: float = 60) -> str:
        try:
            async with asyncio.timeout(within_s):
                while not predicate(self.text()):
                    data = await self.process.stdout.read(65536)
                    if not data:
                        self.closed = True
                        break
                    self.seen.extend(data)
                    self.stream.feed(data)
        except TimeoutError:
            pass
        assert predicate(self.text()), f"never saw {what}; the screen:\n{self.text()}"
        return self.text()


@pytest.mark.timeout(180)
async def test_the_tui_runs_over_ssh_at_80_by_24(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {f"src/{name}.py": f"{name} = 1\n" for name in EXPLORED})
    nestor = str(Path(sys.executable).parent / "nestor")
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    with ScriptedOpenAIServer(router(three_explorers("All three were **found**.", delay=1.0))) as model:
        env = {key: value for key, value in openai_env(tmp_path, model).items() if key != "TERM"}
        served = NestorOverSSH([nestor, "--model", "openai-chat:gpt-4o"], cwd=repo, env=env)
        server = await asyncssh.create_server(
            _OpenServer,
            "127.0.0.1",
            0,
            server_host_keys=[host_key],
            process_factory=served.session,
            encoding=None,
        )
        port = server.sockets[0].getsockname()[1]
        try:
            async with asyncssh.connect(
                "127.0.0.1", port, username="someone", known_hosts=None, client_keys=None
            ) as connection:
                process = await connection.create_process(
                    term_type="xterm-256color", term_size=(COLUMNS, ROWS), encoding=None
                )
                screen = Screen(process)
                await screen.until(lambda text: "Enter sends" in text, "the TUI")
                process.stdin.write(b"USER: find the three\r")

                def all_done(text: str) -> bool:
                    return all(f"✓ explore · find {name}" in text for name in EXPLORED)

                await screen.until(all_done, "three explore agents done")
                answered = await screen.until(lambda text: "All three were found." in text, "the answer")
                process.stdin.write(b"\x04")  # Ctrl-D exits
                await screen.until(lambda _text: screen.closed, "the session's end", within_s=30)
        finally:
            server.close()
            await server.wait_closed()
    assert served.exit_codes == [0], screen.text()
    assert len(answered.splitlines()) == ROWS
    assert b"resume this session with: nestor --resume ses_" in screen.seen  # printed after the UI closed
