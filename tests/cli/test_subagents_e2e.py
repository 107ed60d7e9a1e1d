"""Sub-agents end to end: ``nestor run`` in a subprocess, the real openai provider, a loopback server.

The scripted server answers each request by the conversation it belongs to (its first user
message), so the main agent and its parallel sub-agents each follow their own script whatever the
order their requests arrive in.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall, ServerUsage, first_user_text
from tests.cli.support import git_repo, nestor, nestor_json, openai_env
from tests.server_routes import Route, router


def usage(prompt: int = 1000, completion: int = 100) -> ServerUsage:
    return ServerUsage(prompt_tokens=prompt, completion_tokens=completion)


def task_call(description: str, prompt: str, **extra: Any) -> ServerToolCall:
    return ServerToolCall("task", {"description": description, "prompt": prompt, **extra})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(
        tmp_path / "repo",
        {
            "src/auth.py": "def login(user):\n    return check(user)\n",
            "src/db.py": "def connect():\n    pass\n",
        },
    )


def run_json(repo: Path, env: dict[str, str], *args: str) -> list[dict[str, Any]]:
    done = nestor(
        ["run", "--yolo", "-o", "stream-json", "--model", "openai-chat:gpt-4o", *args], cwd=repo, env=env
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_parallel_explore_agents_roll_their_cost_up_to_the_main_session(repo: Path, tmp_path: Path) -> None:
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(
                text="Two searches at once.",
                tool_calls=(
                    task_call("find login", "find login code", subagent_type="explore"),
                    task_call("find db", "find database code", subagent_type="explore"),
                ),
                usage=usage(),
            ),
            ServerReply(text="Login is in src/auth.py, the database in src/db.py.", usage=usage()),
        ],
        "find login code": [
            ServerReply(tool_calls=(ServerToolCall("grep", {"pattern": "def login"}),), usage=usage(500, 20)),
            ServerReply(text="login() is at src/auth.py:1", usage=usage(600, 20)),
        ],
        "find database code": [
            ServerReply(
                tool_calls=(ServerToolCall("grep", {"pattern": "def connect"}),), usage=usage(500, 20)
            ),
            ServerReply(text="connect() is at src/db.py:1", usage=usage(600, 20)),
        ],
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        env = openai_env(tmp_path, server)
        events = run_json(repo, env, "USER: where are login and the database?")
        requests = list(server.requests)

    result = events[-1]
    assert result["type"] == "result" and result["stop_reason"] == "completed"
    assert result["result"] == "Login is in src/auth.py, the database in src/db.py."
    main_id = result["session_id"]
    # The whole tree's tokens: the main agent's 2 requests and 2 x 2 of the sub-agents.
    assert result["usage"]["input_tokens"] == 2 * 1000 + 2 * (500 + 600)
    assert result["main_usage"]["input_tokens"] == 2 * 1000
    assert result["cost_usd"] > result["main_usage"]["cost_usd"] > 0

    started = [e for e in events if e["type"] == "agent_started" and e["parent_id"] == main_id]
    assert sorted(e["description"] for e in started) == ["find db", "find login"]
    assert {(e["depth"], e["agent_type"]) for e in started} == {(1, "explore")}
    child_ids = {e["agent_id"] for e in started}
    child_tools = [e for e in events if e["type"] == "tool_started" and e["agent_id"] in child_ids]
    assert sorted(e["tool_name"] for e in child_tools) == ["grep", "grep"]

    # The sub-agents saw only their task, with read-only tools; the main agent saw their reports.
    child_requests = [r for r in requests if first_user_text(r).startswith("find ")]
    assert all(
        {t["function"]["name"] for t in r["tools"]} == {"view", "ls", "glob", "grep"} for r in child_requests
    )
    last_main = [r for r in requests if first_user_text(r).startswith("USER")][-1]
    tool_contents = "\n".join(str(m["content"]) for m in last_main["messages"] if m["role"] == "tool")
    assert "login() is at src/auth.py:1" in tool_contents and "connect() is at src/db.py:1" in tool_contents
    assert re.search(r"\[agent ses_\w+ \(explore\) · 1 tool · [\d.]+s · ", tool_contents)

    shown = nestor_json(["sessions", "show", main_id, "--json"], cwd=repo, env=env)
    children = [nestor_json(["sessions", "show", child, "--json"], cwd=repo, env=env) for child in child_ids]
    main_cost = shown["session"]["cost_usd"]
    child_cost = sum(child["session"]["cost_usd"] for child in children)
    assert all(child["session"]["parent_id"] == main_id for child in children)
    # The main session's total includes its sub-agents' (and its title's) cost.
    assert main_cost >= result["cost_usd"] == pytest.approx(result["main_usage"]["cost_usd"] + child_cost)


def test_a_sub_agent_is_resumed_after_a_restart(repo: Path, tmp_path: Path) -> None:
    def resume_it(body: dict[str, Any]) -> ServerReply:
        agent_id = re.search(r"\[agent (ses_\w+) \(general\)", json.dumps(body["messages"]))
        assert agent_id, "the first report's footer names the agent"
        return ServerReply(
            tool_calls=(task_call("dig deeper", "and where is check()?", resume=agent_id.group(1)),)
        )

    resumed_conversations: list[list[dict[str, Any]]] = []

    def resumed_child(body: dict[str, Any]) -> ServerReply:
        resumed_conversations.append(body["messages"])
        return ServerReply(text="check() is not defined anywhere")

    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(tool_calls=(task_call("survey auth", "survey the auth module"),)),
            ServerReply(text="The survey is done."),
            resume_it,
            ServerReply(text="check() is missing."),
        ],
        "survey the auth module": [ServerReply(text="auth has login() calling check()"), resumed_child],
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        env = openai_env(tmp_path, server)
        first = run_json(repo, env, "USER: survey auth")
        # A new process continues the session; the sub-agent's history comes from the store.
        second = run_json(repo, env, "--continue", "USER: and check()?")

    assert first[-1]["session_id"] == second[-1]["session_id"]
    assert second[-1]["result"] == "check() is missing."
    [conversation] = resumed_conversations
    texts = [m.get("content") for m in conversation if m["role"] in ("user", "assistant")]
    assert texts == ["survey the auth module", "auth has login() calling check()", "and where is check()?"]


def test_a_headless_run_waits_for_its_background_agent_and_answers_its_notice(
    repo: Path, tmp_path: Path
) -> None:
    def after_notice(body: dict[str, Any]) -> ServerReply:
        last = body["messages"][-1]
        assert last["role"] == "user" and "[Background sub-agent" in str(last["content"])
        return ServerReply(text="The background agent found the TODO in src/db.py.")

    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(
                tool_calls=(task_call("scan todos", "scan for TODO markers", run_in_background=True),)
            ),
            ServerReply(text="Started a scan; I will report when it ends."),
            after_notice,
        ],
        "scan for TODO": [ServerReply(text="One TODO, in src/db.py:2", delay=0.5)],
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        events = run_json(repo, openai_env(tmp_path, server), "USER: scan in the background")

    result = events[-1]
    assert result["result"] == "The background agent found the TODO in src/db.py."
    types = [e["type"] for e in events]
    notice = types.index("background_notice")
    assert types.index("agent_finished") < notice < len(types) - 1
    [child] = [e for e in events if e["type"] == "agent_finished" and e["parent_id"] == result["session_id"]]
    assert child["stop_reason"] == "completed"


def test_a_sub_agent_gets_the_projects_agents_md(repo: Path, tmp_path: Path) -> None:
    (repo / "AGENTS.md").write_text("House rule: every function has a docstring.\n")
    routes: dict[str, list[ServerReply | Route]] = {
        "USER": [
            ServerReply(tool_calls=(task_call("check", "CHILD: check auth", subagent_type="explore"),)),
            ServerReply(text="checked"),
        ],
        "CHILD": [ServerReply(text="auth is in src/auth.py:1")],
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        run_json(repo, openai_env(tmp_path, server), "USER: check auth")
        [child] = [body for body in server.requests if first_user_text(body).startswith("CHILD")]
    assert "House rule: every function has a docstring." in child["messages"][0]["content"]
