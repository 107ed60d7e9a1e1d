"""Driving the real TUI headless (Textual's Pilot) over a real app and a scripted loopback server."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Button

from nestor.app import App
from nestor.cli.options import CommonOptions
from nestor.cli.tui import build_tui
from nestor.cli.tui.app import NestorTui
from nestor.cli.tui.dialogs import PermissionScreen
from nestor.cli.tui.prompt_editor import PromptEditor
from nestor.cli.tui.transcript import Note, ToolBlock
from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerStepSource, ServerToolCall, ServerUsage
from tests.app.test_conversation import settings_for
from tests.server_routes import Route, task_call


@dataclass
class Running:
    """The TUI under test, its pilot and the server its model talks to."""

    tui: NestorTui
    pilot: Pilot[int]
    server: ScriptedOpenAIServer

    async def send(self, text: str) -> None:
        """Type ``text`` into the prompt and press Enter."""
        editor = self.tui.query_one(PromptEditor)
        editor.focus()
        editor.insert(text)
        await self.pilot.press("enter")

    async def question(self) -> PermissionScreen:
        """Wait for a permission dialog to be on screen, drawn (its buttons mounted); return it."""

        def drawn() -> bool:
            screen = self.tui.screen
            return isinstance(screen, PermissionScreen) and len(screen.query(Button)) == 3

        await self.until(drawn)
        assert isinstance(self.tui.screen, PermissionScreen)
        return self.tui.screen

    async def until(self, predicate: Callable[[], bool], *, timeout: float = 15.0) -> None:
        """Let the app run until ``predicate()`` holds (the timeout only stops a hung test)."""
        async with asyncio.timeout(timeout):
            while not predicate():
                await self.pilot.pause(0.05)


@asynccontextmanager
async def running_tui(
    tmp_path: Path,
    script: Sequence[ServerStepSource],
    *,
    size: tuple[int, int] = (100, 32),
    clock: Callable[[], float] | None = None,
    redraw_s: float = 0.5,
    config: str = "",
) -> AsyncIterator[Running]:
    """The TUI on a new session of a project whose model is ``script``, running headless.

    ``config`` is more of the project's ``nestor.toml``.
    """
    with ScriptedOpenAIServer(list(script)) as server:
        settings = settings_for(tmp_path, server.base_url, config)
        nestor = App.open(settings)
        try:
            options = CommonOptions(directory=Path(settings.project_root), trust=True)
            tui = await build_tui(nestor, options, env={}, clock=clock, redraw_s=redraw_s)
            async with tui.run_test(size=size) as pilot:
                try:
                    yield Running(tui, pilot, server)
                finally:
                    await tui.controller.shutdown()
        finally:
            nestor.close()


_SESSION_ID = re.compile(r"ses_[0-9a-f]{20}")
_SECONDS = re.compile(r"\b\d+(?:\.\d+)?s\b|\b\d+m\d\ds\b")


async def steady(running: Running) -> None:
    """Make the screen the same on every run: session ids, the project's path, durations, the cursor.

    The tree's times come from the app's clock (fixed in the snapshot tests); what the runtime
    measured itself (a tool call's, a turn's duration) and the ids it made are replaced here.
    """
    running.tui.editor.cursor_blink = False  # a blinking cursor is drawn, or not, by the time
    await running.tui.controller.conversation.wait_for_title(10)  # the status bar shows it
    await running.pilot.pause(0.2)
    project = str(running.tui.nestor.settings.project_root)
    for transcript in running.tui.transcripts.values():
        for entry in transcript.entries:
            if isinstance(entry, ToolBlock):
                entry.duration_s = 0.1
            elif isinstance(entry, Note):
                text = _SESSION_ID.sub("ses_" + "0" * 20, entry.text.replace(project, "/work/project"))
                entry.text = _SECONDS.sub("1.0s", text)
    await running.tui.show_agent(running.tui.shown_agent_id)
    await running.tui.redraw_now()  # the tree and the status bar as of now, not of their last redraw
    await running.pilot.pause(0.2)


EXPLORED = ("alpha", "beta", "gamma")


def three_explorers(answer: str, *, delay: float = 0.0) -> dict[str, list[ServerReply | Route]]:
    """Three explore agents at once (each greps, then answers after ``delay``), then the main ``answer``.

    Every request reports 1,000 input and 100 output tokens.
    """
    usage = ServerUsage(prompt_tokens=1000, completion_tokens=100)
    calls = tuple(
        task_call(f"find {name}", f"{name.upper()}: find it", subagent_type="explore") for name in EXPLORED
    )
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(text="Three searches at once.", tool_calls=calls, usage=usage),
            ServerReply(text=answer, usage=usage),
        ]
    }
    for name in EXPLORED:
        routes[name.upper()] = [
            ServerReply(tool_calls=(ServerToolCall("grep", {"pattern": f"{name} ="}),), usage=usage),
            ServerReply(text=f"`{name}` is defined in `src/{name}.py`, line 1.", usage=usage, delay=delay),
        ]
    return routes
