"""Matchers read as Claude Code reads them, on nestor's tool names and Claude Code's."""

from __future__ import annotations

import pytest

from nestor.runtime.features.hook_events.matching import matches
from nestor.tools.catalogue import ToolCatalogue

NAMES = ToolCatalogue().hook_names


@pytest.mark.parametrize("matcher", [None, "", "*"])
def test_no_matcher_an_empty_one_or_a_star_match_everything(matcher: str | None) -> None:
    assert matches(matcher, NAMES("bash")) and matches(matcher, ("mcp__db__query",))


@pytest.mark.parametrize(
    ("matcher", "tool", "expected"),
    [
        ("Bash", "bash", True),
        ("bash", "bash", True),
        ("Bas", "bash", False),  # letters alone: an exact name, not a prefix
        ("Edit|Write", "write", True),
        ("Edit|Write", "edit", True),
        ("Edit|Write", "view", False),
        ("Read", "view", True),
        ("Grep|Glob", "glob", True),
        ("WebFetch", "web_fetch", True),
        ("WebFetch", "fetch", True),
        ("WebSearch", "web_search", True),
        ("Agent", "task", True),  # Claude Code's name since 2.1.63
        ("Task", "task", True),  # and before: hooks written then still match
        ("Task", "task_status", False),
        ("mcp__github__.*", "mcp__github__search", True),
        ("mcp__github__.*", "mcp__gitlab__search", False),
        ("mcp__.*__write.*", "mcp__fs__write_file", True),
        ("Notebook.*", "edit", False),
        ("[invalid", "bash", False),  # an invalid expression matches nothing rather than failing
    ],
)
def test_names_lists_and_expressions_match_both_name_sets(matcher: str, tool: str, expected: bool) -> None:
    assert matches(matcher, NAMES(tool)) is expected
