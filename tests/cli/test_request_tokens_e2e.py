"""The fixed size of nestor's requests: system prompt and tool definitions, counted, not timed.

``nestor run`` in a subprocess against the scripted OpenAI server: the main agent (``coder``)
delegates once to ``explore``; the first request of each is counted with the counter
``bench/startup_peers.py`` compares peers with (``nestor.testing.request_tokens``: characters / 4).
The ceilings (the README's section on start-up against peers gives the figures) sit a little above
today's counts, 4,976 and 1,763, and far below the smallest peer that hands its model a set of
tools (OpenCode, 7.7k; Codex CLI 9.5k, Claude Code 12.1k): a prompt or tool description that grows
fails here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall, first_user_text
from nestor.testing.request_tokens import count_tokens, fixed_text
from tests.cli.support import git_repo, nestor, openai_env

CODER_CEILING = 5_100
EXPLORE_CEILING = 1_850


def first_requests(tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first request body of the main agent and of an ``explore`` sub-agent it starts."""
    search = ServerToolCall(
        "task", {"description": "find main", "prompt": "CHILD: where is main?", "subagent_type": "explore"}
    )

    def answer(request: dict[str, Any]) -> ServerReply:
        if not request.get("tools"):
            return ServerReply(text="A title")
        if first_user_text(request).startswith("CHILD"):
            return ServerReply(text="main is in app.py:1")
        done = any(message.get("role") == "tool" for message in request["messages"])
        return ServerReply(text="It is in app.py.") if done else ServerReply(tool_calls=(search,))

    # No source file: no language server starts, so the count does not depend on what is installed.
    repo = git_repo(tmp_path / "repo", {"NOTES.md": "main is in app.py\n"})
    with ScriptedOpenAIServer([answer] * 8) as server:
        done = nestor(
            ["run", "--model", "openai-chat:gpt-4o", "where is main?"],
            cwd=repo,
            env=openai_env(tmp_path, server),
        )
        assert done.returncode == 0, done.stderr
        agents = [body for body in server.requests if body.get("tools")]
    coder = next(body for body in agents if not first_user_text(body).startswith("CHILD"))
    explore = next(body for body in agents if first_user_text(body).startswith("CHILD"))
    return coder, explore


def test_the_first_requests_of_coder_and_explore_stay_under_their_ceilings(tmp_path: Path) -> None:
    coder, explore = first_requests(tmp_path)
    coder_tokens, explore_tokens = count_tokens(fixed_text(coder)), count_tokens(fixed_text(explore))
    assert coder_tokens <= CODER_CEILING, f"coder's first request: {coder_tokens} tokens"
    assert explore_tokens <= EXPLORE_CEILING, f"explore's first request: {explore_tokens} tokens"
    # What is counted is what was sent: the prompt and every tool the agent has.
    assert len(coder["tools"]) >= 10 and {t["function"]["name"] for t in explore["tools"]} >= {"grep", "view"}
