"""AgentSpec: which tools an agent gets, and when it is read-only."""

from __future__ import annotations

from nestor.agents.spec import AgentSpec
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
