"""``nestor mcp serve``: an SDK client over stdio lists nestor's agents and has one do a task."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters, stdio_client
from mcp.types import TextContent

from nestor import __version__
from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.support import git_repo, openai_env
from tests.tools.mcp.support import DEMO_SERVER

pytestmark = pytest.mark.timeout(120)


def serve_params(repo: Path, env: dict[str, str], *options: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "nestor", "--model", "openai-chat:gpt-4o", *options, "mcp", "serve"],
        env=env,
        cwd=repo,
    )


async def test_mcp_serve_answers_tools_list_and_tools_call_with_a_sub_agents_report(tmp_path: Path) -> None:
    repo = git_repo(
        tmp_path / "repo",
        {
            "src/auth.py": "def login(user):\n    return user\n",
            ".nestor/agents/reviewer.md": "---\ndescription: Reviews code.\ntools: [view]\n---\nReview.\n",
        },
    )
    script = [
        ServerReply(tool_calls=(ServerToolCall("grep", {"pattern": "def login"}),)),
        ServerReply(text="login() is in src/auth.py:1"),
    ]
    with ScriptedOpenAIServer(script) as server:
        env = openai_env(tmp_path, server)
        async with Client(serve_params(repo, env)) as client:
            listed = await client.list_tools()
            tools = {tool.name: tool for tool in listed.tools}
            result = await client.call_tool(
                "explore", {"prompt": "where is login?", "description": "find login"}
            )
            info = client.server_info

    assert info is not None and (info.name, info.version) == ("nestor", __version__)
    assert {"explore", "plan", "general", "reviewer"} <= set(tools)
    assert tools["reviewer"].description == "Reviews code."
    assert tools["explore"].input_schema["required"] == ["prompt"]
    assert not result.is_error
    assert [block.text for block in result.content if isinstance(block, TextContent)] == [
        "login() is in src/auth.py:1"
    ]
    child_request = server.requests[0]
    assert "where is login?" in str(child_request["messages"])
    assert {tool["function"]["name"] for tool in child_request["tools"]} >= {"grep", "view"}
    assert "task" not in {tool["function"]["name"] for tool in child_request["tools"]}
    assert "src/auth.py:\n  1: def login(user):" in tool_output(server.requests[1])


def tool_output(request: dict[str, object]) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    return str(next(message["content"] for message in messages if message["role"] == "tool"))  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]


async def test_a_task_stopped_by_its_budget_is_an_error_result_with_its_report(tmp_path: Path) -> None:
    repo = git_repo(
        tmp_path / "repo",
        {".nestor/agents/short.md": "---\ndescription: Short.\ntools: [grep]\nmax_turns: 1\n---\nWork.\n"},
    )
    script = [
        ServerReply(tool_calls=(ServerToolCall("grep", {"pattern": "x"}),)),
        ServerReply(text="I only got halfway."),
    ]
    with ScriptedOpenAIServer(script) as server:
        env = openai_env(tmp_path, server)
        async with Client(serve_params(repo, env)) as client:
            result = await client.call_tool("short", {"prompt": "do it"})

    assert result.is_error
    text = " ".join(block.text for block in result.content if isinstance(block, TextContent))
    assert "Sub-agent failed: stopped" in text and "I only got halfway." in text


async def test_mcp_serve_skips_a_project_server_not_approved_and_says_so(tmp_path: Path) -> None:
    pid_file = tmp_path / "demo.pid"
    server = {"command": sys.executable, "args": [str(DEMO_SERVER)], "env": {"DEMO_PID_FILE": str(pid_file)}}
    repo = git_repo(tmp_path / "repo", {".mcp.json": json.dumps({"mcpServers": {"demo": server}})})
    log = tmp_path / "stderr.log"
    with ScriptedOpenAIServer([]) as model, log.open("w") as errors:
        env = openai_env(tmp_path, model)
        async with Client(stdio_client(serve_params(repo, env, "--trust"), errlog=errors)) as client:
            assert "explore" in {tool.name for tool in (await client.list_tools()).tools}

    assert (
        "nestor: MCP server demo (.mcp.json) is not approved, so it did not start; "
        "`nestor mcp approve demo` shows its definition and approves it"
    ) in log.read_text().splitlines()
    assert not pid_file.exists()
