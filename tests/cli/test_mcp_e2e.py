"""MCP tools end to end: ``nestor run`` (a real subprocess) calls a real stdio MCP server's tool."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall, first_user_text
from tests.cli.support import git_repo, nestor, openai_env
from tests.server_routes import Route, router
from tests.tools.mcp.support import DEMO_SERVER

pytestmark = pytest.mark.timeout(120)

MODEL = ["--model", "openai-chat:gpt-4o"]


def demo_server_toml(name: str = "demo") -> str:
    return f'[mcp_servers.{name}]\ncommand = "{sys.executable}"\nargs = ["{DEMO_SERVER}"]\n'


def user_config(env: dict[str, str], text: str) -> None:
    path = Path(env["XDG_CONFIG_HOME"]) / "nestor" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def tool_messages(request: dict[str, Any]) -> list[str]:
    return [str(message["content"]) for message in request["messages"] if message["role"] == "tool"]


def echo_script() -> list[ServerReply]:
    return [
        ServerReply(tool_calls=(ServerToolCall("mcp__demo__echo", {"text": "from the model"}),)),
        ServerReply(text="The server said it."),
    ]


def test_the_main_agent_calls_an_mcp_tool_through_the_real_sdk(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# r\n"})
    with ScriptedOpenAIServer(echo_script()) as server:
        env = openai_env(tmp_path, server)
        user_config(env, demo_server_toml() + '\n[permissions]\nallow = ["mcp__demo__echo"]\n')
        done = nestor(["run", "-o", "json", *MODEL, "echo something"], cwd=repo, env=env)

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"] == "The server said it."
    tools = {tool["function"]["name"]: tool["function"] for tool in server.requests[0]["tools"]}
    assert tools["mcp__demo__echo"]["parameters"]["properties"]["text"]["type"] == "string"
    assert tools["mcp__demo__echo"]["description"] == "Return the text, prefixed with 'echo:'."
    assert "view" in tools and "mcp__demo__crash" in tools
    assert tool_messages(server.requests[1]) == ["echo: from the model"]
    log = Path(env["NESTOR_HOME"]) / "mcp" / "logs" / "demo.log"
    assert "echo called with 'from the model'" in log.read_text()


def test_an_mcp_tool_asks_by_default_so_a_headless_run_is_refused_it(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# r\n"})
    with ScriptedOpenAIServer(echo_script()) as server:
        env = openai_env(tmp_path, server)
        user_config(env, demo_server_toml())
        done = nestor(["run", "-o", "json", *MODEL, "echo something"], cwd=repo, env=env)

    assert done.returncode == 0, done.stderr
    (refusal,) = tool_messages(server.requests[1])
    assert "echo:" not in refusal and "mcp__demo__echo" in refusal


def test_an_untrusted_projects_mcp_servers_are_ignored_and_named(tmp_path: Path) -> None:
    repo = git_repo(
        tmp_path / "repo",
        {
            "nestor.toml": demo_server_toml("proj"),
            ".mcp.json": json.dumps(
                {"mcpServers": {"cc": {"command": sys.executable, "args": [str(DEMO_SERVER)]}}}
            ),
        },
    )
    with ScriptedOpenAIServer([ServerReply(text="ok")]) as server:
        env = openai_env(tmp_path, server)
        done = nestor(["run", "-o", "json", *MODEL, "hi"], cwd=repo, env=env)
        assert done.returncode == 0, done.stderr
        assert not any(tool["function"]["name"].startswith("mcp__") for tool in server.requests[0]["tools"])
        assert "mcp_servers.proj" in done.stderr and ".mcp.json server cc" in done.stderr

    with ScriptedOpenAIServer([ServerReply(text="ok")]) as server:
        env = openai_env(tmp_path, server)
        approved = nestor(["--trust", "mcp", "approve", "--all"], cwd=repo, env=env)
        assert approved.returncode == 0, approved.stderr
        done = nestor(["run", "--trust", "-o", "json", *MODEL, "hi"], cwd=repo, env=env)
        assert done.returncode == 0, done.stderr
        names = {tool["function"]["name"] for tool in server.requests[0]["tools"]}
        assert {"mcp__proj__echo", "mcp__cc__echo"} <= names


def imported_modules(importtime_stderr: str) -> set[str]:
    """The modules a ``python -X importtime`` run imported, from its stderr."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in importtime_stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_a_run_without_mcp_servers_never_imports_the_sdk(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# r\n"})
    with ScriptedOpenAIServer([ServerReply(text="ok")]) as server:
        env = openai_env(tmp_path, server)
        env["PYTHONPROFILEIMPORTTIME"] = "1"  # every import, on stderr
        done = nestor(["run", "-o", "json", *MODEL, "hi"], cwd=repo, env=env)
        helped = nestor(["--help"], cwd=repo, env=env)

    assert done.returncode == 0 and json.loads(done.stdout)["result"] == "ok"
    modules = imported_modules(done.stderr) | imported_modules(helped.stderr)
    assert "nestor.runtime.kernel.loop" in modules  # the check sees the run's imports
    assert not {
        name for name in modules if name == "mcp" or name.startswith(("mcp.", "mcp_types", "tomlkit"))
    }


GH_AGENT = f"""---
name: gh
description: Asks the project's own MCP server.
tools: Read
mcpServers:
  - mine:
      command: {sys.executable}
      args: ["{DEMO_SERVER}"]
---
You ask the server.
"""


def delegating_routes() -> list[Route]:
    return router(
        {
            "USER": [
                ServerReply(
                    tool_calls=(
                        ServerToolCall(
                            "task", {"description": "ask", "prompt": "ask the server", "subagent_type": "gh"}
                        ),
                    )
                ),
                ServerReply(text="The sub-agent asked."),
            ],
            "ask the server": [
                ServerReply(tool_calls=(ServerToolCall("mcp__mine__echo", {"text": "from the child"}),)),
                ServerReply(text="It answered."),
            ],
        }
    )


def test_an_agent_files_own_mcp_server_is_its_alone(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {".claude/agents/gh.md": GH_AGENT})
    with ScriptedOpenAIServer(delegating_routes()) as server:
        env = openai_env(tmp_path, server)
        user_config(env, '[permissions]\nallow = ["mcp__mine__echo"]\n')
        approved = nestor(["--trust", "mcp", "approve", "mine"], cwd=repo, env=env)
        assert approved.stdout.startswith("approved MCP server mine (defined by agent gh ("), approved.stderr
        done = nestor(["run", "--trust", "-o", "json", *MODEL, "USER: use gh"], cwd=repo, env=env)

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"] == "The sub-agent asked."
    main = [request for request in server.requests if first_user_text(request).startswith("USER")]
    child = [request for request in server.requests if first_user_text(request) == "ask the server"]
    assert not any(tool["function"]["name"].startswith("mcp__") for tool in main[0]["tools"])
    # gh lists only read tools, so it is read-only: of its server's tools, only those that only read.
    assert {tool["function"]["name"] for tool in child[0]["tools"]} == {"view", "mcp__mine__echo"}
    assert tool_messages(child[1]) == ["echo: from the child"]


def test_an_untrusted_agent_files_own_servers_do_not_start(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {".claude/agents/gh.md": GH_AGENT})
    with ScriptedOpenAIServer(delegating_routes()) as server:
        env = openai_env(tmp_path, server)
        done = nestor(["run", "-o", "json", *MODEL, "USER: use gh"], cwd=repo, env=env)

    assert done.returncode == 0, done.stderr
    assert "agent gh's MCP servers" in done.stderr
    child = [request for request in server.requests if first_user_text(request) == "ask the server"]
    assert {tool["function"]["name"] for tool in child[0]["tools"]} == {"view"}
    assert not (Path(env["NESTOR_HOME"]) / "mcp" / "logs" / "mine.log").exists()


def test_a_large_mcp_result_goes_to_a_file_like_any_tools(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"README.md": "# r\n"})
    script = [
        ServerReply(tool_calls=(ServerToolCall("mcp__demo__big", {"lines": 3000}),)),
        ServerReply(text="Long."),
    ]
    with ScriptedOpenAIServer(script) as server:
        env = openai_env(tmp_path, server)
        config = '\n[permissions]\nallow = ["mcp__demo"]\n[context]\ntool_result_max_tokens = 1000\n'
        user_config(env, demo_server_toml() + config)
        done = nestor(["run", "-o", "json", *MODEL, "get a lot"], cwd=repo, env=env)

    assert done.returncode == 0, done.stderr
    (shown,) = tool_messages(server.requests[1])
    assert "The mcp__demo__big result was" in shown and "too large to show in full" in shown
    saved = Path(shown.split("It was saved to ", 1)[1].split(";", 1)[0])
    assert saved.read_text().count("of a long result") == 3000
    assert len(shown) < 20_000
