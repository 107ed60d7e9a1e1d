"""Which tools each agent gets, in order: the main agent and every kind of sub-agent, per model size.

A record of the composition (the main coder, the compact coder of a small model, the built-in
agents, agent files with other assistants' tool names, a research agent confined to a workspace),
driven through the real app over a loopback OpenAI-compatible server.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nestor.app import App
from nestor.config.loading import load_settings
from nestor.config.settings import Settings
from nestor.runtime.features.agentic_fetch import research_spec
from nestor.runtime.tree.services import TaskRequest
from nestor.testing import ScriptedOpenAIServer, ServerReply

CLAUDE_AGENT = """---
name: reviewer
description: Reviews code.
tools: Read, Grep, Glob, WebFetch, Bash, Agent
---
You review code.
"""
GEMINI_AGENT = """---
name: investigator
description: Investigates.
tools: ["read_*", "search_file_content", "run_shell_command", "write_file", "google_web_search"]
---
You investigate.
"""
SUBAGENTS = ("explore", "plan", "general", "reviewer", "investigator")


def project_settings(root: Path, base_url: str, *, profile: str, max_depth: int) -> Settings:
    project = root / "project"
    (project / ".claude" / "agents").mkdir(parents=True)
    (project / ".claude" / "agents" / "reviewer.md").write_text(CLAUDE_AGENT, encoding="utf-8")
    (project / ".gemini" / "agents").mkdir(parents=True)
    (project / ".gemini" / "agents" / "investigator.md").write_text(GEMINI_AGENT, encoding="utf-8")
    (project / "nestor.toml").write_text(
        f'[models.large]\nmodel = "scripted:large-model"\nprofile = "{profile}"\n'
        f'[models.small]\nmodel = "scripted:small-model"\nprofile = "{profile}"\n'
        f"[agents]\nmax_depth = {max_depth}\n"
        f'[providers.scripted]\ntype = "openai"\nbase_url = "{base_url}"\n',
        encoding="utf-8",
    )
    env = {"NESTOR_HOME": str(root / "home"), "HOME": str(root)}
    return load_settings(project, env=env, user_config_path=root / "no-user-config.toml", trusted=True)


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer([ServerReply(text="Done.")] * 20) as scripted:
        yield scripted


async def tool_sets(
    root: Path, server: ScriptedOpenAIServer, *, profile: str, max_depth: int
) -> dict[str, list[str]]:
    """The tool names of the main agent and of each sub-agent it starts, as each agent is built."""
    app = App.open(project_settings(root, server.base_url, profile=profile, max_depth=max_depth))
    try:
        main = await app.start_main_agent(env={})
        tree = app.tree
        assert tree is not None
        sets = {"main": [tool.name for tool in main.setup.tools]}
        requests = [TaskRequest(description=name, prompt="look", agent_type=name) for name in SUBAGENTS]
        workspace = root / "workspace"
        workspace.mkdir()
        requests.append(
            TaskRequest(description="agentic_fetch", prompt="look", spec=research_spec(), workspace=workspace)
        )
        for request in requests:
            # In the background, the child is live (and its tools inspectable) until it ends.
            agent_id = await tree.start_background(main, request, f"call-{request.description}")
            sets[request.description] = [tool.name for tool in tree.live[agent_id].setup.tools]
            await tree.background.wait(agent_id, timeout=None)
        return sets
    finally:
        app.close()


LARGE_MAIN = [
    *("view", "ls", "glob", "grep", "write", "edit", "bash", "fetch", "todo_write"),
    *("task", "task_status", "task_output", "task_cancel", "agentic_fetch"),
]
READING = ["view", "ls", "glob", "grep"]
LARGE_GENERAL = [
    *("view", "ls", "glob", "grep", "write", "edit", "bash", "fetch", "todo_write"),
    "web_search",
    "web_fetch",
]
RESEARCH = ["web_search", "web_fetch", "view", "grep", "glob"]
DELEGATION = ["task", "task_status", "task_output", "task_cancel", "agentic_fetch"]


async def test_the_tool_sets_of_a_large_model(tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    sets = await tool_sets(tmp_path, server, profile="full", max_depth=1)
    assert sets == {
        "main": LARGE_MAIN,
        "explore": READING,
        "plan": READING,
        "general": LARGE_GENERAL,
        "reviewer": ["view", "glob", "grep", "bash", "web_fetch"],
        "investigator": ["view", "grep", "write", "bash", "web_search"],
        "agentic_fetch": RESEARCH,
    }


async def test_the_tool_sets_of_a_large_model_whose_sub_agents_may_delegate(
    tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    sets = await tool_sets(tmp_path, server, profile="full", max_depth=2)
    assert sets == {
        "main": LARGE_MAIN,
        "explore": READING,
        "plan": READING,
        "general": [*LARGE_GENERAL, *DELEGATION],
        "reviewer": [
            "view",
            "glob",
            "grep",
            "bash",
            "web_fetch",
            "task",
            "task_status",
            "task_output",
            "task_cancel",
        ],
        "investigator": ["view", "grep", "write", "bash", "web_search"],
        "agentic_fetch": RESEARCH,
    }


async def test_the_tool_sets_of_a_small_model(tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    sets = await tool_sets(tmp_path, server, profile="small", max_depth=2)
    assert sets == {
        "main": ["view", "ls", "glob", "grep", "edit", "bash", "task"],
        "explore": READING,
        "plan": READING,
        "general": ["view", "ls", "glob", "grep", "edit", "bash", *DELEGATION],
        "reviewer": ["view", "glob", "grep", "bash", "task", "task_status", "task_output", "task_cancel"],
        "investigator": ["view", "grep", "bash"],
        "agentic_fetch": RESEARCH,
    }
