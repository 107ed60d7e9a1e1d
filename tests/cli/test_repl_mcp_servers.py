"""The REPL asks before a project's MCP server first starts: its definition shown, yes or no, once.

A project agent file's own server is asked about in the prompt when the sub-agent that gets it is
built; the project config's servers, which start with the main agent, before the prompt runs.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.plain_text import PlainTextOutput

from nestor.app.mcp_approvals import pending_servers, project_servers
from nestor.cli.mcp_cmd import ask_to_approve_servers
from nestor.cli.repl import Terminal, repl_main
from nestor.config.loading import load_settings
from nestor.config.settings import Settings
from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall
from tests.cli.repl_support import eventually, lines_of, plain_console
from tests.cli.test_mcp_e2e import GH_AGENT
from tests.server_routes import router, tool_texts

pytestmark = pytest.mark.timeout(120)

ENTER = "\r"


def _pending(settings: Settings) -> list[tuple[str, str]]:
    return [(server.name, state) for server, state in pending_servers(settings, project_servers(settings))]


def project_settings(root: Path, base_url: str, files: dict[str, str]) -> Settings:
    project = root / "project"
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text, encoding="utf-8")
    config = (
        '[models]\nlarge = "scripted:model"\n'
        f'[providers.scripted]\ntype = "openai"\nbase_url = "{base_url}"\n'
        '[permissions]\nallow = ["mcp__mine__echo"]\n'
    )
    (project / "nestor.toml").write_text(config, encoding="utf-8")
    env = {"NESTOR_HOME": str(root / "home"), "HOME": str(root)}
    return load_settings(project, env=env, user_config_path=root / "no-user-config.toml", trusted=True)


def delegation() -> list[ServerReply]:
    task = {"description": "ask", "prompt": "ask the server", "subagent_type": "gh"}
    return [
        ServerReply(tool_calls=(ServerToolCall("task", task),)),
        lambda body: ServerReply(text="Done: " + tool_texts(body)[:60]),  # type: ignore[list-item]
    ]


async def run_once(settings: Settings, answer: str) -> tuple[list[str], str]:
    """One REPL session: a prompt that delegates to gh, ``answer`` typed at the question; its lines."""
    console, screen = io.StringIO(), io.StringIO()
    with create_pipe_input() as pipe:
        terminal = Terminal(plain_console(console), input=pipe, output=PlainTextOutput(screen))
        repl = asyncio.create_task(repl_main(settings, terminal=terminal, env={}))
        pipe.send_text("USER: use gh" + ENTER)
        if answer:
            await eventually(lambda: "y yes · n or Esc no" in screen.getvalue())
            pipe.send_text(answer)
        await eventually(lambda: any(line.startswith("2 turns · ") for line in lines_of(console)))
        pipe.send_text("/exit" + ENTER)
        async with asyncio.timeout(10):
            assert await repl == 0
    return lines_of(console), screen.getvalue()


async def test_the_repl_asks_before_an_agent_files_server_first_starts_and_a_yes_is_kept(
    tmp_path: Path,
) -> None:
    routes = {"USER": delegation() * 2, "ask the server": [ServerReply(text="It answered.")] * 2}
    routes["ask the server"][0:0] = [
        ServerReply(tool_calls=(ServerToolCall("mcp__mine__echo", {"text": "hi"}),))
    ]
    routes["ask the server"][2:2] = [
        ServerReply(tool_calls=(ServerToolCall("mcp__mine__echo", {"text": "hi"}),))
    ]
    with ScriptedOpenAIServer(router(routes)) as server:  # type: ignore[arg-type]
        settings = project_settings(tmp_path, server.base_url, {".claude/agents/gh.md": GH_AGENT})
        lines, screen = await run_once(settings, "y")
        again, screen_again = await run_once(settings, "")  # approved: not asked again

    assert (
        "? Start MCP server mine (defined by agent gh (" in screen and '{"args": [' in screen
    )  # and its definition
    assert "⎿ ✓ yes: Start MCP server mine (defined by agent gh" in "\n".join(lines)
    assert "y yes · n or Esc no" not in screen_again
    echoes = [body for body in server.requests if "echo: hi" in tool_texts(body)]
    assert len(echoes) == 2  # the server ran in both sessions
    assert pending_servers(settings, project_servers(settings, {"HOME": str(tmp_path)})) == []
    assert not any("approve" in line for line in again)


async def test_a_no_keeps_the_server_stopped_and_is_not_asked_again_in_the_session(tmp_path: Path) -> None:
    routes = {
        "USER": delegation() * 2,
        "ask the server": [ServerReply(text="I have no such tool.")] * 2,
    }
    with ScriptedOpenAIServer(router(routes)) as server:  # type: ignore[arg-type]
        settings = project_settings(tmp_path, server.base_url, {".claude/agents/gh.md": GH_AGENT})
        console, screen = io.StringIO(), io.StringIO()
        with create_pipe_input() as pipe:
            terminal = Terminal(plain_console(console), input=pipe, output=PlainTextOutput(screen))
            repl = asyncio.create_task(repl_main(settings, terminal=terminal, env={}))
            pipe.send_text("USER: use gh" + ENTER)
            await eventually(lambda: "y yes · n or Esc no" in screen.getvalue())
            pipe.send_text("a")  # not an answer to a yes/no question: still asking
            await asyncio.sleep(0.2)
            pipe.send_text("n")
            await eventually(lambda: any(line.startswith("2 turns · ") for line in lines_of(console)))
            pipe.send_text("USER: use gh again" + ENTER)
            await eventually(lambda: sum(line.startswith("2 turns · ") for line in lines_of(console)) == 2)
            pipe.send_text("/exit" + ENTER)
            async with asyncio.timeout(10):
                assert await repl == 0

    assert sum("✗ no: Start MCP server mine" in line for line in lines_of(console)) == 1
    children = [
        body for body in server.requests if tool_texts(body) == "" and "ask the server" in json.dumps(body)
    ]
    assert children and not any("mcp__mine__echo" in json.dumps(body.get("tools", [])) for body in children)
    assert not (settings.data_dir / "mcp" / "logs" / "mine.log").exists()


def test_before_the_repl_each_unapproved_config_server_is_asked_about_once_and_a_no_is_kept(
    tmp_path: Path,
) -> None:
    servers = {
        "mcpServers": {"docs": {"type": "http", "url": "http://127.0.0.1:9/mcp"}, "lint": {"command": "x"}}
    }
    files = {".mcp.json": json.dumps(servers), "nestor.toml": ""}
    settings = project_settings(tmp_path, "http://127.0.0.1:9/v1", files)
    questions: list[str] = []

    def answer(question: str) -> str:
        questions.append(question)
        return "y" if "docs" in question else "no"

    def closed(_question: str) -> str:
        raise EOFError

    ask_to_approve_servers(settings, answer)
    ask_to_approve_servers(settings, closed)  # docs is approved now, lint declined: nothing is asked

    assert questions[0] == (
        "Start MCP server docs (defined by .mcp.json)?\n"
        '  {"transport": "http", "url": "http://127.0.0.1:9/mcp"}\n'
        "Start it, now and while it stays so? [y/N] "
    )
    assert [question.split("?")[0] for question in questions] == [
        "Start MCP server docs (defined by .mcp.json)",
        "Start MCP server lint (defined by .mcp.json)",
    ]
    assert _pending(settings) == [("lint", "declined")]

    # lint changes: asked again; stdin closed is a no.
    servers["mcpServers"]["lint"] = {"command": "y"}
    settings = project_settings(tmp_path, "http://127.0.0.1:9/v1", {".mcp.json": json.dumps(servers)})
    ask_to_approve_servers(settings, closed)
    assert _pending(settings) == [("lint", "declined")]
