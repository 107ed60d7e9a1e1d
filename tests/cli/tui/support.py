"""Driving the real TUI headless (Textual's Pilot) over a real app and a scripted loopback server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from nestor.app import App
from nestor.cli.options import CommonOptions
from nestor.cli.tui import build_tui
from nestor.cli.tui.app import NestorTui, PromptEditor
from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.app.test_conversation import settings_for
from tests.server_routes import Route


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

    async def until(self, predicate: Callable[[], bool], *, timeout: float = 15.0) -> None:
        """Let the app run until ``predicate()`` holds (the timeout only stops a hung test)."""
        async with asyncio.timeout(timeout):
            while not predicate():
                await self.pilot.pause(0.05)


@asynccontextmanager
async def running_tui(
    tmp_path: Path,
    script: Sequence[ServerReply | Route],
    *,
    size: tuple[int, int] = (100, 32),
    clock: Callable[[], float] | None = None,
) -> AsyncIterator[Running]:
    """The TUI on a new session of a project whose model is ``script``, running headless."""
    with ScriptedOpenAIServer(list(script)) as server:  # type: ignore[arg-type]
        settings = settings_for(tmp_path, server.base_url)
        nestor = App.open(settings)
        try:
            options = CommonOptions(directory=Path(settings.project_root), trust=True)
            tui = await build_tui(nestor, options, env={}, clock=clock)
            async with tui.run_test(size=size) as pilot:
                yield Running(tui, pilot, server)
                await tui.controller.shutdown()
        finally:
            nestor.close()


def task_call(description: str, prompt: str, **extra: Any) -> ServerToolCall:
    """A ``task`` tool call."""
    return ServerToolCall("task", {"description": description, "prompt": prompt, **extra})
