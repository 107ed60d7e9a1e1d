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


# -- rules that hold: the red-team findings ----------------------------------------------------------


def test_read_rules_govern_every_read_tool() -> None:
    rule = parse_rule("deny", "Read(secrets/**)")
    for tool in ("view", "grep", "glob", "ls"):
        assert rule.matches(tool, "/repo/secrets/key.pem", "/repo"), tool
    assert rule.matches("ls", "/repo/secrets", "/repo")  # the directory itself
    assert not parse_rule("deny", "grep(secrets/**)").matches("view", "/repo/secrets/key.pem", "/repo")


def test_a_write_rule_governs_edit_and_the_reverse() -> None:
    for text in ("write(src/**)", "edit(src/**)", "Edit(src/**)", "MultiEdit(src/**)", "Write(src/**)"):
        rule = parse_rule("deny", text)
        assert rule.matches("write", "/repo/src/a.py", "/repo"), text
        assert rule.matches("edit", "/repo/src/a.py", "/repo"), text


def test_relative_patterns_cover_the_project_only() -> None:
    rule = parse_rule("allow", "edit(*.txt)")
    assert rule.matches("edit", "/repo/notes.txt", "/repo")
    assert rule.matches("edit", "/repo/docs/notes.txt", "/repo")
    assert not rule.matches("edit", "/tmp/x.txt", "/repo")


def test_a_bare_allow_rule_covers_the_project_only_a_bare_deny_everything() -> None:
    for text in ("write", "edit", "write(*)", "view"):
        rule = parse_rule("allow", text)
        tool = "view" if text == "view" else "write"
        assert rule.matches(tool, "/repo/a.py", "/repo"), text
        assert not rule.matches(tool, "/home/user/.bashrc", "/repo"), text
    assert parse_rule("deny", "write").matches("write", "/home/user/.bashrc", "/repo")


def test_absolute_and_home_patterns_reach_outside_the_project() -> None:
    assert parse_rule("allow", "write(/tmp/scratch/**)").matches("write", "/tmp/scratch/a/b.txt", "/repo")
    assert parse_rule("allow", "Edit(//tmp/scratch/*)").matches("edit", "/tmp/scratch/b.txt", "/repo")
    home = parse_rule("deny", "view(~/.ssh/**)")
    from pathlib import Path

    assert home.matches("view", str(Path.home() / ".ssh" / "id_rsa"), "/repo")


def test_fetch_rules_match_the_parsed_url_not_its_text() -> None:
    rule = parse_rule("allow", "fetch(https://docs.python.org*)")
    assert rule.matches("fetch", "https://docs.python.org/3/library/os.html", "/repo")
    assert rule.matches("web_fetch", "https://DOCS.python.org./3/", "/repo")
    assert not rule.matches("fetch", "https://docs.python.org@evil.example/", "/repo")
    assert not rule.matches("fetch", "https://docs.python.org.evil.example/", "/repo")
    assert not rule.matches("fetch", "http://docs.python.org/", "/repo")  # another scheme
    assert not rule.matches("fetch", "https://docs.python.org:8443/", "/repo")  # another port
    assert not rule.matches("fetch", "https://docs.python.org\\@evil.example/", "/repo")


def test_fetch_path_globs_apply_to_the_normalised_path() -> None:
    rule = parse_rule("allow", "fetch(https://docs.python.org/3/*)")
    assert rule.matches("fetch", "https://docs.python.org/3/library/", "/repo")
    assert not rule.matches("fetch", "https://docs.python.org/2/library/", "/repo")
    assert not rule.matches("fetch", "https://docs.python.org/3/../2/library/", "/repo")


def test_webfetch_domain_rules_match_the_domain_and_its_subdomains() -> None:
    rule = parse_rule("allow", "WebFetch(domain:example.com)")
    assert rule.matches("fetch", "https://example.com/a", "/repo")
    assert rule.matches("web_fetch", "http://docs.example.com/a?b=c", "/repo")
    assert not rule.matches("fetch", "https://notexample.com/", "/repo")
    assert not rule.matches("fetch", "https://example.com.evil.example/", "/repo")
    assert not rule.matches("fetch", "https://example.com@evil.example/", "/repo")


def test_a_bad_url_rule_is_a_one_line_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_rule("allow", "WebFetch(domain:)", source="nestor.toml")
    assert "nestor.toml" in caught.value.message and "\n" not in caught.value.message
    with pytest.raises(ConfigError):
        parse_rule("allow", "fetch(https://:8080/x)")


def test_which_rule_names_govern_each_tool() -> None:
    tools = (
        "view",
        "ls",
        "glob",
        "grep",
        "write",
        "edit",
        "bash",
        "fetch",
        "web_fetch",
        "web_search",
        "task",
    )
    governed = {
        tool: sorted(
            name for name in (*tools, "Read", "WebFetch", "Agent") if parse_rule("deny", name).governs(tool)
        )
        for tool in tools
    }
    assert governed == {
        "view": ["Read", "view"],
        "ls": ["Read", "ls", "view"],
        "glob": ["Read", "glob", "view"],
        "grep": ["Read", "grep", "view"],
        "write": ["edit", "write"],
        "edit": ["edit", "write"],
        "bash": ["bash"],
        "fetch": ["WebFetch", "fetch"],
        "web_fetch": ["WebFetch", "fetch", "web_fetch"],
        "web_search": ["web_search"],
        "task": ["Agent", "task"],
    }
    assert [normalise_tool_name(name) for name in ("WebSearch", "Task", "read_file", "MCP_x")] == [
        "web_search",
        "task",
        "read_file",  # agent-file names are not rule names
        "mcp_x",
    ]
    # What a pattern is matched against: a path, a URL, a command, else the target as a glob.
    assert parse_rule("deny", "grep(secret/*)").matches("grep", "/repo/secret/a", "/repo")
    assert parse_rule("deny", "web_fetch(https://x.test/*)").matches("web_fetch", "https://x.test/a", "/repo")
    assert not parse_rule("deny", "web_fetch(https://x.test/*)").matches(
        "web_fetch", "https://y.test/", "/repo"
    )
    assert parse_rule("deny", "web_search(*secret*)").matches("web_search", "the secret plan", "/repo")
