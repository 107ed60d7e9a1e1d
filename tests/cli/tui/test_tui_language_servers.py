"""The TUI's status bar says when a language server is starting (a real one that never answers)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nestor.app import App
from nestor.cli.options import CommonOptions
from nestor.cli.tui import build_tui
from nestor.config import load_settings
from nestor.testing import ScriptedOpenAIServer, ServerReply
from tests.cli.tui.support import Running
from tests.tools.lsp.test_failing_servers import SILENT

pytestmark = pytest.mark.timeout(60)


async def test_the_status_bar_shows_a_language_server_while_it_starts(tmp_path: Path) -> None:
    script = tmp_path / "silent.py"
    script.write_text(SILENT, encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    with ScriptedOpenAIServer([ServerReply(text="ok")]) as server:
        config = '[models]\nlarge = "scripted:large-model"\n\n[providers.scripted]\ntype = "openai"\n'
        config += f'base_url = "{server.base_url}"\n\n[lsp.slowpoke]\ncommand = "{sys.executable}"\n'
        config += f'args = ["{script}", "{tmp_path / "runs"}"]\nextensions = [".py"]\n'
        (project / "nestor.toml").write_text(config, encoding="utf-8")
        env = {"NESTOR_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
        settings = load_settings(project, env=env, user_config_path=tmp_path / "none.toml", trusted=True)
        nestor = App.open(settings)
        try:
            tui = await build_tui(nestor, CommonOptions(directory=project, trust=True), env={})
            async with tui.run_test(size=(120, 30)) as pilot:
                running = Running(tui, pilot, server)
                status = lambda: str(tui.status_bar.render())  # noqa: E731
                await running.until(lambda: "Enter sends" in status())
                assert "language server" not in status()
                nestor.lsp.warm(project / "main.py")  # what view does with a Python file
                await running.until(lambda: "starting slowpoke (language server)" in status())
                await tui.controller.shutdown()
        finally:
            await nestor.aclose()
    assert nestor.language_servers_starting() == []
