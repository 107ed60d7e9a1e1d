from __future__ import annotations

import pytest

from nestor.agents.tool_names import (
    NESTOR_TOOLS,
    describe_unknown_tool,
    expand_tool_wildcard,
    is_wildcard,
    map_tool_name,
    split_tool_entry,
)
from nestor.tools.catalogue import BuiltByOwner, ToolCatalogue


@pytest.mark.parametrize(
    ("foreign", "nestor"),
    [
        # Claude Code
        ("Read", "view"),
        ("Write", "write"),
        ("Edit", "edit"),
        ("MultiEdit", "edit"),
        ("Glob", "glob"),
        ("Grep", "grep"),
        ("LS", "ls"),
        ("Bash", "bash"),
        ("WebFetch", "web_fetch"),
        ("WebSearch", "web_search"),
        ("Task", "task"),
        ("Agent", "task"),
        ("TodoWrite", "todo_write"),
        # emdash / mini-cc
        ("read_file", "view"),
        ("list_files", "ls"),
        ("semantic_search", "grep"),
        # Crush
        ("multiedit", "edit"),
        ("agent", "task"),
        ("agentic_fetch", "agentic_fetch"),
        ("fetch", "fetch"),
        # OpenCode
        ("read", "view"),
        ("list", "ls"),
        ("patch", "edit"),
        ("todowrite", "todo_write"),
        ("webfetch", "web_fetch"),
        ("websearch", "web_search"),
        # Gemini CLI
        ("write_file", "write"),
        ("replace", "edit"),
        ("run_shell_command", "bash"),
        ("search_file_content", "grep"),
        ("list_directory", "ls"),
        ("google_web_search", "web_search"),
        ("read_many_files", "view"),
    ],
)
def test_foreign_names_map_onto_nestor_tools(foreign: str, nestor: str) -> None:
    assert map_tool_name(foreign) == nestor
    assert map_tool_name(foreign.upper()) == nestor
    assert map_tool_name(f"  {foreign} ") == nestor


def test_nestor_names_map_to_themselves_and_every_target_is_a_nestor_tool() -> None:
    for name in NESTOR_TOOLS:
        assert map_tool_name(name) == name
    assert set(ToolCatalogue().aliases().values()) == set(NESTOR_TOOLS)


@pytest.mark.parametrize("name", ["NotebookEdit", "mcp__github__create_issue", "sourcegraph", "", "bash(x)"])
def test_unknown_names_map_to_none(name: str) -> None:
    assert map_tool_name(name) is None


def test_wildcards_expand_against_nestor_and_foreign_names() -> None:
    assert expand_tool_wildcard("*") == NESTOR_TOOLS
    assert expand_tool_wildcard("read_*") == ("view",)
    assert expand_tool_wildcard("web_*") == ("web_search", "web_fetch")
    assert expand_tool_wildcard("TASK_*") == ("task_status", "task_output", "task_cancel")
    assert expand_tool_wildcard("mcp_*") == ()
    assert is_wildcard("read_*")
    assert not is_wildcard("read_file")


def test_a_catalogue_with_a_registered_tool_knows_its_names() -> None:
    catalogue = ToolCatalogue()
    catalogue.register(
        "docs_search", BuiltByOwner("an MCP server"), traits=["read_only"], aliases=["SearchDocs"]
    )
    assert map_tool_name("SearchDocs", catalogue) == "docs_search"
    assert map_tool_name("SearchDocs") is None  # the built-ins alone do not have it
    assert expand_tool_wildcard("docs_*", catalogue) == ("docs_search",)
    assert "did you mean 'docs_search'" in describe_unknown_tool("docs_serch", catalogue)
    assert describe_unknown_tool("gerp", catalogue).endswith(", agentic_fetch, docs_search)")


def test_split_tool_entry_separates_claude_patterns() -> None:
    assert split_tool_entry("Bash(git *)").name == "Bash"
    assert split_tool_entry("Bash(git *)").pattern == "git *"
    assert split_tool_entry(" Read ").name == "Read"
    assert split_tool_entry("Read").pattern is None


def test_describe_unknown_tool_says_what_nestor_offers() -> None:
    notebook = describe_unknown_tool("NotebookEdit")
    assert "NotebookEdit" in notebook
    assert "edit" in notebook
    assert ", ".join(NESTOR_TOOLS) in notebook
    assert "MCP" in describe_unknown_tool("mcp__github__create_issue")
    assert "grep" in describe_unknown_tool("sourcegraph")
    assert "did you mean 'grep'" in describe_unknown_tool("gerp")
    assert "did you mean" not in describe_unknown_tool("frobnicate")
    assert "did you mean" not in describe_unknown_tool("gerp", suggest=False)
