from __future__ import annotations

import pytest

from nestor.core.errors import ConfigError
from nestor.permissions.rules import Rule, normalise_tool_name, parse_rule


def test_parse_plain_tool_and_pattern() -> None:
    assert parse_rule("allow", "view") == Rule("allow", "view", None)
    assert parse_rule("deny", "bash(rm -rf*)") == Rule("deny", "bash", "rm -rf*")


def test_claude_code_spellings_are_accepted() -> None:
    assert parse_rule("allow", "Bash(git status:*)") == Rule("allow", "bash", "git status*")
    assert parse_rule("allow", "Read") == Rule("allow", "view", None)
    assert parse_rule("allow", "WebFetch") == Rule("allow", "fetch", None)
    assert normalise_tool_name("MultiEdit") == "edit"


def test_invalid_rule_names_source_and_section() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_rule("ask", "bash(", source="nestor.toml")
    assert "nestor.toml" in caught.value.message and "permissions.ask" in caught.value.message
    assert caught.value.hint is not None and "tool(pattern)" in caught.value.hint


def test_command_patterns_match_prefixes() -> None:
    rule = parse_rule("allow", "bash(git status*)")
    assert rule.matches("bash", "git status --short", "/repo")
    assert not rule.matches("bash", "git push", "/repo")
    assert not rule.matches("view", "git status", "/repo")


def test_path_patterns_match_absolute_and_project_relative() -> None:
    rule = parse_rule("allow", "edit(src/*)")
    assert rule.matches("edit", "/repo/src/pkg/module.py", "/repo")
    assert not rule.matches("edit", "/repo/tests/test_x.py", "/repo")
    assert parse_rule("deny", "write(/etc/*)").matches("write", "/etc/passwd", "/repo")


def test_star_tool_matches_every_tool() -> None:
    assert Rule("deny", "*", None).matches("anything", "x", "/repo")


def test_a_fetch_rule_also_governs_web_fetch() -> None:
    rule = parse_rule("deny", "WebFetch(*internal*)")
    assert rule.matches("web_fetch", "http://internal.example/", "/repo")
    assert rule.matches("fetch", "http://internal.example/", "/repo")
    assert not parse_rule("deny", "web_fetch").matches("fetch", "http://x/", "/repo")
