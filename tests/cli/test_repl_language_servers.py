"""The REPL's status line shows a language server while it starts (a real one that never answers)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from prompt_toolkit.formatted_text import fragment_list_to_text, to_formatted_text
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from nestor.app.lsp_info import LspManager
from nestor.cli.repl import LinePrompt
from nestor.config.sections import LspServerConfig
from tests.cli.repl_support import MakeHarness, eventually, make_harness
from tests.processes import is_running
from tests.tools.lsp.test_failing_servers import SILENT

__all__ = ["make_harness"]  # the fixture, used by name
pytestmark = pytest.mark.timeout(60)


async def test_the_status_line_shows_a_language_server_while_it_starts(
    make_harness: MakeHarness, tmp_path: Path
) -> None:
    harness = make_harness()
    await harness.controller.open(None)
    script = tmp_path / "silent.py"
    script.write_text(SILENT, encoding="utf-8")
    config = LspServerConfig(
        command=sys.executable,
        args=(str(script), str(tmp_path / "runs")),
        extensions=(".py",),
        request_timeout_s=30,
    )
    servers = LspManager({"slowpoke": config}, root=tmp_path, trusted=True, env={}, log_dir=tmp_path / "logs")
    try:
        with create_pipe_input() as pipe:
            prompt = LinePrompt(
                harness.controller,
                harness.question,
                input=pipe,
                output=DummyOutput(),
                servers_starting=servers.starting,
            )

            def toolbar() -> list[str]:
                return fragment_list_to_text(to_formatted_text(prompt.session.bottom_toolbar)).splitlines()

            assert toolbar() == ["Enter send · Alt-Enter new line · /help · Ctrl-D exit"]
            servers.warm(tmp_path / "main.py")  # what view does with a Python file
            assert toolbar() == [
                "Enter send · Alt-Enter new line · /help · Ctrl-D exit",
                "  starting slowpoke (language server)",
            ]
            await eventually(lambda: (tmp_path / "runs").exists())  # its process is up
    finally:
        await servers.close()
    assert servers.starting() == []
    [pid] = (tmp_path / "runs").read_text(encoding="utf-8").split()
    assert not is_running(int(pid))  # closing while it started left no process behind
