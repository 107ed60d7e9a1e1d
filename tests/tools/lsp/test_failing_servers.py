"""Servers that crash or never answer: restarted once, timed out, never a hang."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from nestor.config.sections import LspServerConfig
from nestor.core.errors import ToolError
from nestor.tools.base import ToolContext
from nestor.tools.edit import EditParams, EditTool
from nestor.tools.lsp.definition import DefinitionTool
from nestor.tools.lsp.manager import LspManager
from nestor.tools.lsp.tool_base import SymbolAt
from tests.processes import is_running

pytestmark = pytest.mark.timeout(60)

CRASHING = """
import sys
with open(sys.argv[1], "a") as runs:
    runs.write("run\\n")
sys.stderr.write("boom: this server always crashes\\n")
sys.exit(3)
"""
READ_MESSAGE = """
import json, sys

def read():
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        if not line.strip():
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))
"""
"""A scripted server's ``read()``: the next JSON-RPC message from stdin (exits at its end)."""
CRASHING_ON_OPEN = (
    READ_MESSAGE
    + """
with open(sys.argv[1], "a") as runs:
    runs.write("run\\n")

while True:
    message = read()
    if message.get("method") == "initialize":
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {}}}).encode()
        sys.stdout.buffer.write(b"Content-Length: %d\\r\\n\\r\\n%s" % (len(body), body))
        sys.stdout.buffer.flush()
    elif message.get("method") == "textDocument/didOpen":
        sys.stderr.write("crashing on didOpen\\n")
        sys.exit(3)
"""
)
SILENT = """
import os, sys
with open(sys.argv[1], "a") as runs:
    runs.write(f"{os.getpid()}\\n")
for _line in sys.stdin.buffer:  # reads every request, answers none
    pass
"""


def script_server(
    tmp_path: Path,
    project: Path,
    source: str,
    *,
    diagnostics_timeout_s: float = 2,
    request_timeout_s: float = 20,
) -> tuple[LspManager, Path]:
    """A manager whose only Python server is ``source`` run by this Python; and its runs file."""
    script = tmp_path / "server.py"
    script.write_text(source, encoding="utf-8")
    runs = tmp_path / "runs.txt"
    config = LspServerConfig(
        command=sys.executable,
        args=(str(script), str(runs)),
        extensions=(".py",),
        diagnostics_timeout_s=diagnostics_timeout_s,
        request_timeout_s=request_timeout_s,
    )
    manager = LspManager(
        {"fake": config},
        root=project,
        trusted=True,
        env={"PATH": str(tmp_path / "empty")},
        log_dir=tmp_path / "logs",
    )
    return manager, runs


async def test_a_crashing_server_is_restarted_once_and_its_stderr_logged(
    tmp_path: Path, project: Path, ctx: ToolContext
) -> None:
    manager, runs = script_server(tmp_path, project, CRASHING)
    try:
        with pytest.raises(ToolError) as raised:
            await DefinitionTool(manager).run(SymbolAt(path="uses.py", line=3, symbol="helper"), ctx)
        assert "fake stopped while answering initialize" in raised.value.message
        assert f"see {tmp_path / 'logs' / 'fake.log'}" in raised.value.message
        assert runs.read_text(encoding="utf-8") == "run\nrun\n"  # started, restarted once, given up
        assert (tmp_path / "logs" / "fake.log").read_text(encoding="utf-8").count("boom") == 2
        assert [status.state for status in manager.statuses() if status.name == "fake"] == ["failed"]
        # Given up: later calls fail at once, and an edit goes through without diagnostics.
        edited = await EditTool(manager).run(
            EditParams(path="uses.py", old_string="value", new_string="result"), ctx
        )
        assert edited.content.startswith("Edited uses.py")
        assert runs.read_text(encoding="utf-8") == "run\nrun\n"
    finally:
        await manager.close()


async def test_a_server_that_never_answers_times_out(tmp_path: Path, project: Path, ctx: ToolContext) -> None:
    manager, runs = script_server(tmp_path, project, SILENT, diagnostics_timeout_s=0.5, request_timeout_s=1.5)
    try:
        started = time.monotonic()
        edited = await EditTool(manager).run(
            EditParams(path="uses.py", old_string="value", new_string="result"), ctx
        )
        assert time.monotonic() - started < 1.4  # the edit waited its half second, not the start's time-out
        assert edited.content.endswith(
            "(fake is still starting; the diagnostics tool can check uses.py later.)"
        )
        with pytest.raises(ToolError, match=r"fake did not answer initialize within 1.5 s; see .*fake.log"):
            await DefinitionTool(manager).run(SymbolAt(path="uses.py", line=3, symbol="helper"), ctx)
        assert time.monotonic() - started < 10
        [pid] = runs.read_text(encoding="utf-8").split()  # not answering is not crashing: no restart
        assert not is_running(int(pid))  # killed when it did not answer
    finally:
        closing = time.monotonic()
        await manager.close()
        assert time.monotonic() - closing < 5


async def test_a_server_that_crashes_while_running_is_restarted_once_then_given_up(
    tmp_path: Path, project: Path, ctx: ToolContext
) -> None:
    manager, runs = script_server(tmp_path, project, CRASHING_ON_OPEN)
    try:
        # It starts, is sent the file and dies: the edit does not wait out its time-out for it.
        started = time.monotonic()
        edited = await EditTool(manager).run(
            EditParams(path="uses.py", old_string="value", new_string="result"), ctx
        )
        assert edited.content.startswith("Edited uses.py") and "fake" not in edited.content
        assert time.monotonic() - started < 1.5
        # Restarted in the background; it dies again on the next file it is sent, and is given up.
        with pytest.raises(ToolError, match="fake stopped while answering textDocument/definition"):
            await DefinitionTool(manager).run(SymbolAt(path="uses.py", line=3, symbol="helper"), ctx)
        assert runs.read_text(encoding="utf-8") == "run\nrun\n"
        [status] = [status for status in manager.statuses() if status.name == "fake"]
        assert status.state == "failed"
        assert status.detail == f"fake crashed twice (exit code 3); see {tmp_path / 'logs' / 'fake.log'}"
        log = (tmp_path / "logs" / "fake.log").read_text(encoding="utf-8")
        assert log.count("crashing on didOpen") == 2
        with pytest.raises(ToolError, match="fake crashed twice"):
            await DefinitionTool(manager).run(SymbolAt(path="uses.py", line=3, symbol="helper"), ctx)
    finally:
        await manager.close()
