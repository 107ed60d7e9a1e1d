"""An agent file that names MCP servers no config defines is told about, in one line, at start."""

from __future__ import annotations

from pathlib import Path

from nestor.app import App
from nestor.testing import ScriptedOpenAIServer, ServerReply
from tests.app.test_conversation import settings_for

TRIAGE = """---
name: triage
description: Files issues.
tools: Read, mcp__github__create_issue, mcp__docs
mcpServers:
  - linear
  - mine: {type: stdio, command: python, args: [server.py]}
---
Body.
"""


async def test_an_agent_naming_unconfigured_servers_is_named_once_with_what_to_do(tmp_path: Path) -> None:
    agents = tmp_path / "project" / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "triage.md").write_text(TRIAGE, encoding="utf-8")
    lines: list[str] = []
    with ScriptedOpenAIServer([ServerReply(text="ok")]) as server:
        app = App.open(settings_for(tmp_path, server.base_url), notify=lines.append)
        try:
            await app.conversation(interactive=False, env={})
            await app.conversation(interactive=False, env={})
        finally:
            await app.aclose()
    notices = [line for line in lines if "MCP servers that are not configured" in line]
    assert notices == [
        f"agent triage ({agents / 'triage.md'}) names MCP servers that are not configured "
        "(docs, github, linear), so it gets none of their tools; add them with `nestor mcp add`"
    ]  # its own server (mine) is defined in its file; said once per process
