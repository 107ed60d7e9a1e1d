"""MCP servers and tools in agent files: Claude Code's mcpServers, emdash's and nestor's mcp_servers."""

from __future__ import annotations

from pathlib import Path

from nestor.agents.readers import ReadContext, ReadResult, read_agent_text
from nestor.agents.spec import AgentSpec, PermissionRuleSpec


def read(ecosystem: str, text: str) -> ReadResult:
    return read_agent_text(ReadContext(Path("/p/a.md"), "project", ecosystem, "a"), text)


CLAUDE = """---
name: gh
description: Works on issues.
tools: Read, mcp__github__get_issue, mcp__docs
mcpServers:
  - github
  - mine:
      type: stdio
      command: python
      args: [server.py]
      env: {TOKEN: x}
  - remote: {type: http, url: "https://example.com/mcp", headers: {A: b}}
---
Body.
"""


def test_claude_mcp_servers_are_names_and_inline_definitions() -> None:
    result = read("claude", CLAUDE)
    assert result.problems == ()
    spec = result.spec
    assert spec is not None
    assert spec.tools == ("view", "mcp__github__get_issue", "mcp__docs")
    assert spec.mcp_servers == ("github",)
    (mine_name, mine), (remote_name, remote) = spec.own_mcp_servers
    assert (mine_name, mine.command, mine.args, mine.env) == (
        "mine",
        "python",
        ("server.py",),
        {"TOKEN": "x"},
    )
    assert (remote_name, remote.kind, remote.headers) == ("remote", "http", {"A": "b"})


def test_an_agent_gets_the_mcp_tools_its_entries_and_servers_allow() -> None:
    spec = read("claude", CLAUDE).spec
    assert spec is not None
    available = (
        "view",
        "bash",
        "mcp__github__get_issue",
        "mcp__github__delete",
        "mcp__docs__a",
        "mcp__docsx__b",
    )
    # github is named in mcpServers, but its tool list names one of its tools: that one alone
    assert spec.tool_names(available) == ("view", "mcp__github__get_issue", "mcp__docs__a")
    listed = AgentSpec("x", "d", "p", tools=("view", "mcp__docs__a"), disallowed_tools=("mcp__docs__*",))
    assert listed.tool_names(available) == ("view",)
    assert AgentSpec("x", "d", "p").tool_names(available) == available  # no list: the parent's, all


def test_emdash_and_nestor_mcp_servers_are_mappings() -> None:
    emdash = read(
        "emdash",
        "---\ndescription: d\nmcp_servers:\n  gh:\n"
        "    command: gh-mcp\n    enabled: false\n    timeout: 5\n---\n",
    )
    assert emdash.spec is not None
    ((name, gh),) = emdash.spec.own_mcp_servers
    assert (name, gh.command, gh.enabled, gh.timeout) == ("gh", "gh-mcp", False, 5)
    nestor = read(
        "nestor",
        "---\ndescription: d\nmcp_servers: {github: true, own: {url: 'http://127.0.0.1:1/mcp'}}\n---\n",
    )
    assert nestor.spec is not None and nestor.spec.mcp_servers == ("github",)
    assert nestor.spec.own_mcp_servers[0][0] == "own"


def test_a_bad_server_is_an_error_in_nestors_format_and_a_warning_in_another_tools() -> None:
    bad = "mcp_servers: {broken: {args: [x]}}\n"
    strict = read("nestor", f"---\ndescription: d\n{bad}---\n")
    assert strict.spec is None
    assert "give either `command`" in strict.problems[0].message and strict.problems[0].line == 3
    lenient = read("emdash", f"---\ndescription: d\n{bad}---\n")
    assert lenient.spec is not None and lenient.spec.own_mcp_servers == ()
    assert lenient.problems[-1].severity == "warning" and "left out" in lenient.problems[-1].message
    named = read("nestor", "---\ndescription: d\nmcp_servers: [a__b]\n---\n")
    assert named.spec is None and "single '_'" in named.problems[0].message


def test_permission_rules_in_agent_files_name_mcp_tools() -> None:
    text = (
        "---\ndescription: d\npermission:\n  allow: [mcp__docs__*]\n  deny: [mcp__github__delete_repo]\n---\n"
    )
    spec = read("nestor", text).spec
    assert spec is not None
    assert spec.permission == (
        PermissionRuleSpec("allow", "mcp__docs__*"),
        PermissionRuleSpec("deny", "mcp__github__delete_repo"),
    )
