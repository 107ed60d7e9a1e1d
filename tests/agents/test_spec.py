"""AgentSpec: which tools an agent gets, and when it is read-only."""

from __future__ import annotations

from nestor.agents.spec import AgentSpec
from nestor.config.sections import McpServerConfig
from nestor.tools.catalogue import BuiltByOwner, ToolCatalogue


def spec(tools: tuple[str, ...] | None, disallowed: tuple[str, ...] = ()) -> AgentSpec:
    return AgentSpec(name="a", description="d", prompt="p", tools=tools, disallowed_tools=disallowed)


def test_an_agent_is_read_only_when_it_lists_only_read_only_tools() -> None:
    assert spec(("view", "grep", "web_fetch", "todo_write")).is_read_only()
    assert not spec(("view", "bash")).is_read_only()
    assert spec(("view", "bash"), disallowed=("bash",)).is_read_only()
    assert not spec(None).is_read_only()  # its parent's tools, whatever they are
    # fetch changes no file: a child with these tools was read-only before too (the factory also
    # asked the tool classes then; the catalogue is now the one source).
    assert spec(("view", "fetch")).is_read_only()
    assert not spec(("view", "task")).is_read_only()


def test_a_registered_read_only_tool_keeps_an_agent_read_only() -> None:
    catalogue = ToolCatalogue()
    catalogue.register("docs_search", BuiltByOwner("an MCP server"), traits=["read_only"])
    catalogue.register("docs_write", BuiltByOwner("an MCP server"), traits=["writes_files"])
    assert spec(("view", "docs_search")).is_read_only(catalogue)
    assert not spec(("view", "docs_search")).is_read_only()  # unknown to the built-ins
    assert not spec(("view", "docs_write")).is_read_only(catalogue)


DEMO = ("view", "mcp__demo__secret_word", "mcp__demo__add", "mcp__other__x")


def _spec(tools: tuple[str, ...] | None, servers: tuple[str, ...] = ("demo",), **extra: object) -> AgentSpec:
    return AgentSpec("a", "d", "p", tools=tools, mcp_servers=servers, **extra)  # pyright: ignore[reportArgumentType]


def test_a_tools_list_naming_some_of_a_servers_tools_bounds_what_the_server_gives() -> None:
    assert _spec(("view", "mcp__demo__secret_word")).tool_names(DEMO) == ("view", "mcp__demo__secret_word")
    assert _spec(("view", "MCP__Demo__secret_*")).tool_names(DEMO) == ("view", "mcp__demo__secret_word")


def test_a_server_named_with_none_of_its_tools_listed_gives_them_all_as_in_claude_code() -> None:
    assert _spec(("view",)).tool_names(DEMO) == ("view", "mcp__demo__secret_word", "mcp__demo__add")
    assert _spec(("view", "mcp__demo")).tool_names(DEMO) == (
        "view",
        "mcp__demo__secret_word",
        "mcp__demo__add",
    )
    assert _spec(None).tool_names(DEMO) == DEMO
    bounded = _spec(("mcp__demo__secret_word",), disallowed_tools=("mcp__demo__secret_word",))
    assert bounded.tool_names(DEMO) == ()


def test_an_own_server_is_bounded_the_same_way() -> None:
    config = McpServerConfig(command="demo")
    own = _spec(("mcp__mine__echo",), servers=(), own_mcp_servers=(("mine", config),))
    assert own.tool_names(("mcp__mine__echo", "mcp__mine__crash")) == ("mcp__mine__echo",)
    whole = _spec(("view",), servers=(), own_mcp_servers=(("mine", config),))
    assert whole.tool_names(("mcp__mine__echo", "mcp__mine__crash")) == (
        "mcp__mine__echo",
        "mcp__mine__crash",
    )
