"""``AgentOptions``: each option checked before anything starts, and what it does to a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nestor.api import (
    AgentDefinition,
    AgentOptions,
    AssistantMessage,
    ConfigError,
    NestorError,
    ResultMessage,
    ScriptedOpenAIServer,
    ServerReply,
    ServerToolCall,
    ServerUsage,
    load_settings,
)
from nestor.testing import first_user_text
from tests.sdk.support import Routes, collect, options, project
from tests.server_routes import Route, router, task_call, tool_texts

WRITE = ServerToolCall("write", {"path": "notes.txt", "content": "hi\n"})


def tool_names(body: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools", [])}


def requests_of(server: ScriptedOpenAIServer, prompt: str) -> list[dict[str, Any]]:
    return [body for body in server.requests if first_user_text(body) == prompt]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"permission_mode": "yolo"}, "AgentOptions.permission_mode is 'yolo'; it must be one of default"),
        ({"max_turns": 0}, "AgentOptions.max_turns is 0"),
        ({"max_budget_usd": -1}, "AgentOptions.max_budget_usd is -1"),
        ({"hooks": {"BeforeLunch": []}}, "AgentOptions.hooks is 'BeforeLunch'; it must be an event of"),
        ({"allowed_tools": "Read"}, "AgentOptions.allowed_tools is 'Read'"),
        ({"model": "gpt-4o"}, "AgentOptions.model is 'gpt-4o'; it must be 'provider:model'"),
        ({"cwd": "/no/such/dir"}, "AgentOptions.cwd is '/no/such/dir'; it must be an existing directory"),
        ({"settings": "settings.json"}, "AgentOptions.settings is 'settings.json'"),
        ({"system_prompt": {"type": "file"}}, "AgentOptions.system_prompt"),
        ({"can_use_tool": "yes"}, "AgentOptions.can_use_tool is 'yes'"),
        ({"agents": {"rev": AgentDefinition("Reviews", "Review.", tools=["Teleport"])}}, "'Teleport'"),
        ({"agents": {"rev": {"description": "d"}}}, "AgentOptions.agents['rev']"),
        ({"agents": {"two words": AgentDefinition("d", "p")}}, "AgentOptions.agents is 'two words'"),
        ({"disallowed_tools": ["Teleport"]}, "AgentOptions.disallowed_tools: nestor has no tool 'Teleport'"),
        ({"mcp_servers": {"s": {"type": "sdk", "name": "s"}}}, "in-process SDK server"),
        ({"mcp_servers": {"s": {"args": ["x"]}}}, "AgentOptions.mcp_servers['s']"),
        ({"mcp_servers": {"bad name": {"command": "x"}}}, "AgentOptions.mcp_servers: MCP server name"),
        ({"resume": "ses_nope"}, "ses_nope"),
    ],
)
async def test_a_bad_option_is_one_line_naming_it_before_any_request(
    tmp_path: Path, extra: dict[str, Any], expected: str
) -> None:
    with ScriptedOpenAIServer([]) as server:
        with pytest.raises(NestorError) as caught:
            await collect("hello", options(tmp_path, server, **extra))
        assert server.requests == []
    assert expected in caught.value.message and "\n" not in caught.value.message


async def test_allowed_tools_run_without_asking_and_disallowed_ones_are_gone(tmp_path: Path) -> None:
    routes: Routes = {"write notes": [ServerReply(tool_calls=(WRITE,)), ServerReply(text="Done.")]}
    with ScriptedOpenAIServer(router(routes)) as server:
        opts = options(tmp_path, server, allowed_tools=["Write"], disallowed_tools=["Bash", "WebFetch"])
        await collect("write notes", opts)
        first = requests_of(server, "write notes")[0]
    assert (tmp_path / "project" / "notes.txt").exists()
    assert "write" in tool_names(first) and not {"bash", "web_fetch"} & tool_names(first)


async def test_a_disallowed_pattern_denies_the_calls_it_covers_whatever_allows_them(tmp_path: Path) -> None:
    routes: Routes = {"write notes": [ServerReply(tool_calls=(WRITE,)), ServerReply(text="Done.")]}
    with ScriptedOpenAIServer(router(routes)) as server:
        opts = options(tmp_path, server, allowed_tools=["Write"], disallowed_tools=["Write(notes.txt)"])
        await collect("write notes", opts)
        last = requests_of(server, "write notes")[-1]
    assert not (tmp_path / "project" / "notes.txt").exists()
    assert "Permission denied by rule write(notes.txt)" in tool_texts(last)


async def test_max_turns_stops_the_main_agent(tmp_path: Path) -> None:
    def step(body: dict[str, Any]) -> ServerReply:
        if body.get("tools"):
            return ServerReply(tool_calls=(ServerToolCall("ls", {"path": "."}),))
        return ServerReply(text="Stopped after one turn.")  # the report a budget's stop asks for

    with ScriptedOpenAIServer(router({"keep listing": [step] * 5})) as server:
        messages = await collect("keep listing", options(tmp_path, server, max_turns=1))
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "error_max_turns" and result.is_error
    assert result.stop_reason == "max_iterations"


async def test_max_budget_usd_stops_the_tree_once_spent(tmp_path: Path) -> None:
    usage = ServerUsage(prompt_tokens=100_000, completion_tokens=1_000)  # ~$0.26 on gpt-4o

    def step(body: dict[str, Any]) -> ServerReply:
        if body.get("tools"):
            return ServerReply(tool_calls=(ServerToolCall("ls", {"path": "."}),), usage=usage)
        return ServerReply(text="Out of budget.", usage=usage)

    with ScriptedOpenAIServer(router({"spend": [step] * 5})) as server:
        messages = await collect("spend", options(tmp_path, server, max_budget_usd=0.05))
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "error_max_budget_usd"
    assert result.total_cost_usd is not None and result.total_cost_usd > 0.05


async def test_an_agent_definition_is_what_the_main_agent_delegates_to(tmp_path: Path) -> None:
    reviewer = AgentDefinition(
        description="Reviews a file for bugs.",
        prompt="You review code. REVIEWER-PROMPT",
        tools=["Read", "Grep"],
        model="inherit",
    )
    routes: Routes = {
        "review a.py": [
            ServerReply(tool_calls=(task_call("review", "REVIEW a.py", subagent_type="reviewer"),)),
            ServerReply(text="Reviewed: fine."),
        ],
        "REVIEW": [ServerReply(text="No bugs.")],
    }
    with ScriptedOpenAIServer(router(routes)) as server:
        messages = await collect("review a.py", options(tmp_path, server, agents={"reviewer": reviewer}))
        main = requests_of(server, "review a.py")[0]
        [child] = requests_of(server, "REVIEW a.py")
    task_tool = next(tool for tool in main["tools"] if tool["function"]["name"] == "task")
    assert "reviewer" in str(task_tool) and "Reviews a file for bugs." in str(task_tool)
    assert "REVIEWER-PROMPT" in str(child["messages"][0]["content"])
    assert tool_names(child) == {"view", "grep"}
    said = [m for m in messages if isinstance(m, AssistantMessage) and m.agent_type == "reviewer"]
    assert said and all(m.parent_tool_use_id for m in said)


async def test_system_prompt_replaces_or_appends_to_the_main_agents(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(router({"hi": [ServerReply(text="Hello.")] * 2})) as server:
        await collect("hi", options(tmp_path / "a", server, system_prompt="ONLY-THIS-PROMPT"))
        appended = {"type": "preset", "preset": "claude_code", "append": "ALSO-THIS"}
        await collect("hi", options(tmp_path / "b", server, system_prompt=appended))
        replaced, added = (str(body["messages"][0]["content"]) for body in requests_of(server, "hi"))
    assert replaced.startswith("ONLY-THIS-PROMPT") and "You are nestor" not in replaced
    assert "You are nestor" in added and "ALSO-THIS" in added


async def test_plan_mode_reads_and_plans_without_write_edit_or_bash(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(router({"plan it": [ServerReply(text="The plan.")]})) as server:
        await collect("plan it", options(tmp_path, server, permission_mode="plan"))
        [body] = requests_of(server, "plan it")
    assert "view" in tool_names(body) and not {"write", "edit", "bash"} & tool_names(body)
    assert "plan mode" in str(body["messages"][0]["content"])


async def test_settings_given_are_the_start_and_options_go_on_top(tmp_path: Path) -> None:
    root = project(tmp_path)
    with ScriptedOpenAIServer(router({"hi": [ServerReply(text="Hello.")]})) as server:
        base = options(tmp_path, server)
        assert base.env is not None
        settings = load_settings(root, env=base.env)
        opts = AgentOptions(settings=settings, model=base.model, env=base.env, max_turns=3)
        messages = await collect("hi", opts)
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.result == "Hello."


def test_a_config_error_is_a_nestor_error() -> None:
    assert issubclass(ConfigError, NestorError)


def test_mcp_servers_in_claudes_shape_become_the_programs_own_servers(tmp_path: Path) -> None:
    from nestor.sdk.options import prepare

    servers = {
        "docs": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer t"}},
        "files": {"command": "npx", "args": ["-y", "files-server"], "env": {"ROOT": "/tmp"}},
    }
    opts = AgentOptions(
        cwd=project(tmp_path), env={"HOME": str(tmp_path), "NESTOR_HOME": str(tmp_path / "n")}
    )
    opts.mcp_servers = servers
    prepared = prepare(opts)
    docs, files = prepared.settings.mcp_servers["docs"], prepared.settings.mcp_servers["files"]
    assert docs.kind == "http" and docs.headers == {"Authorization": "Bearer t"}
    assert files.kind == "stdio" and files.args == ("-y", "files-server") and files.env == {"ROOT": "/tmp"}
    assert prepared.settings.project_mcp_servers == {}  # the program's own: no approval asked


async def test_continue_conversation_goes_on_with_the_projects_latest_session(tmp_path: Path) -> None:
    replies: list[ServerReply | Route] = [ServerReply(text="Noted."), ServerReply(text="It was fig.")]
    with ScriptedOpenAIServer(router({"the word is fig": replies})) as server:
        first = await collect("the word is fig", options(tmp_path, server))
        again = await collect("which word?", options(tmp_path, server, continue_conversation=True))
    assert isinstance(first[-1], ResultMessage) and isinstance(again[-1], ResultMessage)
    assert again[-1].session_id == first[-1].session_id and again[-1].result == "It was fig."
