"""``/undo``, ``/rewind`` and ``/fork`` in the REPL: the diff shown, the answer asked, then the change."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput

from nestor.app.records import MessageStore, SessionStore, open_database
from nestor.cli.repl import Terminal, repl_main
from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.app.test_checkpoints import settings_for
from tests.cli.repl_support import eventually, lines_of, plain_console
from tests.server_routes import Route, router

ENTER = "\r"


@dataclass
class Session:
    pipe: PipeInput
    buffer: io.StringIO
    project: Path

    def lines(self) -> list[str]:
        return lines_of(self.buffer)

    async def send(self, text: str, *, then: str) -> None:
        """Type ``text``, Enter, and wait for a line starting with ``then``."""
        seen = len(self.lines())
        self.pipe.send_text(text + ENTER)
        await eventually(lambda: any(line.startswith(then) for line in self.lines()[seen:]))


@asynccontextmanager
async def repl(tmp_path: Path, routes: dict[str, list[ServerReply | Route]]) -> AsyncIterator[Session]:
    buffer = io.StringIO()
    with ScriptedOpenAIServer(router(routes)) as server:
        settings = settings_for(tmp_path, server.base_url)
        with create_pipe_input() as pipe:
            terminal = Terminal(plain_console(buffer), input=pipe, output=DummyOutput())
            task = asyncio.create_task(repl_main(settings, terminal=terminal, env={}))
            try:
                yield Session(pipe, buffer, Path(settings.project_root))
            finally:
                pipe.send_text("/exit" + ENTER)
                async with asyncio.timeout(10):
                    assert await task == 0


def bash(command: str) -> ServerReply:
    return ServerReply(tool_calls=(ServerToolCall("bash", {"command": command}),))


def counts(tmp_path: Path) -> dict[str, int]:
    """Each main session's title -> its number of messages."""
    database = open_database(tmp_path / "home" / "nestor.db")
    try:
        sessions, messages = SessionStore(database), MessageStore(database)
        return {session.title: messages.count(session.id) for session in sessions.list()}
    finally:
        database.close()


async def test_undo_shows_the_diff_asks_and_puts_back_files_and_conversation(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "a.txt").write_text("before\n")
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [bash("echo after > a.txt; echo new > b.txt"), ServerReply(text="changed")]
    }
    async with repl(tmp_path, routes) as session:
        await session.send("USER: change", then="2 turns")
        await session.send("/undo", then="-new")  # the last line of the diff: then the question is asked
        assert "undo prompt 1 (USER: change): 2 files" in session.lines()
        assert "-after" in session.lines() and "+before" in session.lines()
        session.pipe.send_text("n")
        await eventually(lambda: any(line.endswith("back? no") for line in session.lines()))
        assert (session.project / "b.txt").exists()
        await session.send("/undo", then="-new")
        session.pipe.send_text("y")
        await eventually(lambda: any("is back to before prompt 1" in line for line in session.lines()))

        assert (session.project / "a.txt").read_text() == "before\n"
        assert not (session.project / "b.txt").exists()
    titles = counts(tmp_path)
    assert titles == {"A session title": 0, "A session title (before the rewind to prompt 1)": 4}


async def test_rewind_lists_the_prompts_then_puts_back_the_code_only_and_fork_copies(tmp_path: Path) -> None:
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            bash("echo one > f.txt"),
            ServerReply(text="first"),
            bash("echo two > f.txt"),
            ServerReply(text="second"),
        ]
    }
    async with repl(tmp_path, routes) as session:
        await session.send("USER: one", then="2 turns")
        await session.send("USER: two", then="2 turns")
        await session.send("/rewind", then="go back to before one with /rewind N")
        assert any(line.strip().startswith("1  USER: one  (1 file changed)") for line in session.lines())
        await session.send("/rewind 1 code", then="-two")
        session.pipe.send_text("y")
        await eventually(lambda: any(line.startswith("undone: prompt 1") for line in session.lines()))
        assert not (session.project / "f.txt").exists()
        await session.send("/fork", then="you are now in ses_")
    titles = counts(tmp_path)
    assert titles == {"A session title": 8, "A session title (fork)": 8}  # the conversation stayed
