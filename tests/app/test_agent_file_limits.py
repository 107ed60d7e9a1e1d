"""A repository with hundreds of agent files: a start reads them within limits and says so in one line,
its notices stay short, and the ``task`` tool's description stays bounded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nestor.agents.file_limits import PROJECT_LIMITS
from nestor.agents.listing import MAX_LISTING_CHARS
from nestor.app import App
from nestor.testing import ScriptedOpenAIServer, ServerReply
from tests.app.test_conversation import settings_for

FILES = PROJECT_LIMITS.files + 20


def _task_description(request: dict[str, Any]) -> str:
    [task] = [tool for tool in request["tools"] if tool["function"]["name"] == "task"]
    return task["function"]["description"]


async def test_a_project_past_the_limits_is_told_in_one_line_and_the_task_tool_stays_bounded(
    tmp_path: Path,
) -> None:
    agents = tmp_path / "project" / ".claude" / "agents"
    agents.mkdir(parents=True)
    for index in range(FILES):
        (agents / f"reviewer-{index:04}.md").write_text(
            f"---\nname: reviewer-{index:04}\ndescription: Reviews the changes of one area for bugs and "
            f"missing tests. Use after a change.\ntools: Read, mcp__tracker\n---\nReview.\n",
            encoding="utf-8",
        )
    lines: list[str] = []
    with ScriptedOpenAIServer([ServerReply(text="ok")]) as server:
        app = App.open(settings_for(tmp_path, server.base_url), notify=lines.append)
        try:
            conversation = await app.conversation(interactive=False, env={})
            await conversation.run_to_completion("hi")
        finally:
            await app.aclose()
        [request] = server.requests
    [limit] = [line for line in lines if "nestor reads at most" in line]
    first_ignored = agents / "reviewer-0500.md"
    assert limit.startswith(f"{first_ignored}:1: nestor reads at most 500 agent files of a project")
    servers = [line for line in lines if "MCP servers that are not configured" in line]
    assert len(servers) == 11 and servers[-1] == "490 more agents name MCP servers that are not configured"
    description = _task_description(request)
    listing = description.split("Available agents (subagent_type):\n", 1)[1]
    assert len(listing) < MAX_LISTING_CHARS + 200
    assert "- explore: " in listing and "- general: " in listing and "- plan: " in listing
    assert listing.splitlines()[-1].startswith("- (") and "more agents not listed" in listing
