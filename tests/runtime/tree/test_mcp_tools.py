"""Which MCP tools a sub-agent gets, and its pool key with MCP servers."""

from __future__ import annotations

from nestor.agents.spec import AgentSpec
from nestor.config.sections import McpServerConfig
from nestor.permissions.policy import PermissionPolicy
from nestor.runtime.tree.child import pool_key
from nestor.runtime.tree.mcp_tools import allowed_mcp_tools
from nestor.tools.catalogue import BuiltByOwner, ToolCatalogue

OWNER = BuiltByOwner("a test")


def catalogue() -> ToolCatalogue:
    tools = ToolCatalogue()
    tools.register("mcp__gh__get_issue", OWNER, traits=("read_only",))
    tools.register("mcp__gh__delete_repo", OWNER)
    tools.register("mcp__docs__search", OWNER, traits=("read_only",))
    return tools


NAMES = ["view", "mcp__gh__get_issue", "mcp__gh__delete_repo", "mcp__docs__search"]


def test_a_child_never_gets_an_mcp_tool_its_parents_rules_deny() -> None:
    parent = PermissionPolicy.from_config([], [], ["mcp__gh__delete_*", "mcp__docs"], project_root="/p")
    spec = AgentSpec("worker", "d", "p")
    assert allowed_mcp_tools(NAMES, spec, parent, catalogue()) == ["view", "mcp__gh__get_issue"]


def test_a_read_only_child_gets_only_the_tools_servers_say_only_read() -> None:
    parent = PermissionPolicy.from_config(["mcp__gh"], [], [], project_root="/p")
    explorer = AgentSpec("explore", "d", "p", tools=("view", "grep"), mcp_servers=("gh",))
    assert explorer.is_read_only(catalogue())
    assert allowed_mcp_tools(NAMES, explorer, parent, catalogue()) == [
        "view",
        "mcp__gh__get_issue",
        "mcp__docs__search",
    ]
    writer = AgentSpec("writer", "d", "p", tools=("view", "mcp__gh"))  # a whole server: not read-only
    assert not writer.is_read_only(catalogue())
    assert allowed_mcp_tools(NAMES, writer, parent, catalogue()) == NAMES


def test_the_pool_key_includes_the_agents_mcp_servers() -> None:
    spec = AgentSpec("gh", "d", "p", own_mcp_servers=(("mine", McpServerConfig(command="a")),))
    other = AgentSpec("gh", "d", "p", own_mcp_servers=(("mine", McpServerConfig(command="b")),))
    named = AgentSpec("gh", "d", "p", mcp_servers=("docs",))
    keys = {pool_key("ses_1", each, ["view"], "m") for each in (spec, other, named)}
    assert len(keys) == 3
    assert pool_key("ses_1", spec, ["view"], "m") == pool_key("ses_1", spec, ["view"], "m")
