"""``nestor run``'s budgets end to end: the run flags bound the whole agent tree, and every stop reports.

A real subprocess, the real openai provider, a scripted loopback server answering each conversation
by its first user message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall, ServerUsage, first_user_text
from tests.cli.support import git_repo, nestor, openai_env
from tests.server_routes import Route, router

MODEL = "openai-chat:gpt-4o"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo", {f"f{n}.txt": f"file {n}\n" for n in range(10)})


def offers_tools(body: dict[str, Any]) -> bool:
    return bool(body.get("tools"))


def main_route(report: str) -> Route:
    """The main agent: delegates while it has tools, reports when it has none."""

    def step(body: dict[str, Any]) -> ServerReply:
        if not offers_tools(body):
            return ServerReply(text=report, usage=ServerUsage(1000, 100))
        call = ServerToolCall("task", {"description": "read files", "prompt": "CHILD: read every file"})
        return ServerReply(tool_calls=(call,), usage=ServerUsage(1000, 100))

    return step


def child_route() -> Route:
    """A sub-agent reading one file after another until it is offered no tools."""
    counter = iter(range(1000))

    def step(body: dict[str, Any]) -> ServerReply:
        if not offers_tools(body):
            return ServerReply(text="CHILD REPORT: read some files", usage=ServerUsage(1000, 100))
        path = f"f{next(counter) % 10}.txt"
        return ServerReply(tool_calls=(ServerToolCall("view", {"path": path}),), usage=ServerUsage(1000, 100))

    return step


def run(repo: Path, tmp_path: Path, *flags: str) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [main_route("MAIN REPORT: a child read files")] * 10,
        "CHILD": [child_route()] * 100,
    }
    with ScriptedOpenAIServer(router(routes, requests=200)) as server:
        done = nestor(
            ["run", "-o", "json", "--model", MODEL, *flags, "USER: read the files"],
            cwd=repo,
            env=openai_env(tmp_path, server),
        )
        requests = [body for body in server.requests if first_user_text(body).startswith(("USER", "CHILD"))]
    assert done.stdout, done.stderr
    return json.loads(done.stdout), requests, done.returncode


def test_max_iterations_bounds_the_main_agent_and_its_sub_agents(repo: Path, tmp_path: Path) -> None:
    outcome, requests, code = run(repo, tmp_path, "--max-iterations", "3")

    # Three requests (one of the main agent, two of the child), then one report turn each.
    assert len(requests) == 5
    assert code == 3 and outcome["stop_reason"] == "max_iterations"
    assert outcome["result"].startswith("MAIN REPORT: a child read files")
    assert "model requests of the main agent and its sub-agents together" in outcome["result"]
    assert "(max_iterations = 3)" in outcome["result"]
    assert not offers_tools(requests[-1])


def test_max_tokens_bounds_the_main_agent_and_its_sub_agents(repo: Path, tmp_path: Path) -> None:
    outcome, requests, code = run(repo, tmp_path, "--max-tokens", "3000")

    # Each request spends 1,100 tokens: the third passes 3,000.
    assert len(requests) == 5
    assert code == 3 and outcome["stop_reason"] == "token_budget"
    assert outcome["result"].startswith("MAIN REPORT")
    assert outcome["usage"]["input_tokens"] + outcome["usage"]["output_tokens"] == 5 * 1100


def test_a_main_agent_stopped_by_its_own_budget_gets_a_final_report(repo: Path, tmp_path: Path) -> None:
    script = [
        ServerReply(tool_calls=(ServerToolCall("view", {"path": "f0.txt"}),)),
        ServerReply(text="Partial: f0.txt says file 0; the rest is unread."),
    ]
    with ScriptedOpenAIServer(router({"USER": list(script)})) as server:
        done = nestor(
            ["run", "-o", "json", "--model", MODEL, "--max-iterations", "1", "USER: read f0"],
            cwd=repo,
            env=openai_env(tmp_path, server),
        )
        requests = [body for body in server.requests if first_user_text(body).startswith("USER")]
    outcome = json.loads(done.stdout)
    assert done.returncode == 3 and outcome["stop_reason"] == "max_iterations"
    assert outcome["result"].startswith("Partial: f0.txt says file 0; the rest is unread.")
    assert len(requests) == 2 and not offers_tools(requests[1])
    assert "You cannot call tools any more" in json.dumps(requests[1]["messages"][-1])
