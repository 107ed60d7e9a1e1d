from __future__ import annotations

from pathlib import Path

import pytest

from nestor.agents.frontmatter import parse_front_matter
from nestor.agents.frontmatter_repair import block_values, join_continuations, quote_values
from nestor.core.errors import AgentFileError

PATH = Path("/project/.claude/agents/a.md")
KEYS = frozenset({"name", "description", "tools", "model", "color"})


def parse(front: str) -> tuple[dict[str, object], list[tuple[int, int, str, str]]]:
    document = parse_front_matter(f"---\n{front}---\n\nThe prompt.\n", PATH, keys=KEYS)
    assert document.body == "The prompt."
    return document.data, [(fix.line, fix.end_line, fix.key, fix.kind) for fix in document.repairs]


def test_valid_yaml_is_read_strictly_with_no_repair() -> None:
    data, repairs = parse('name: a\ndescription: "Use it: now"\ntools: [view, grep]\n')
    assert data == {"name": "a", "description": "Use it: now", "tools": ["view", "grep"]}
    assert repairs == []


@pytest.mark.parametrize(
    ("value", "read"),
    [
        ("Use this agent when: the user asks", "Use this agent when: the user asks"),
        ("**EXPERT**: reviews code", "**EXPERT**: reviews code"),
        ('Use when: a\\nb with "quotes" and C:\\\\x', 'Use when: a\\nb with "quotes" and C:\\\\x'),
        ('Examples: <example>user: "hi"</example>', 'Examples: <example>user: "hi"</example>'),
        ("@mention it: please", "@mention it: please"),
    ],
    ids=["colon", "leading stars", "backslashes and quotes as written", "tags", "leading @"],
)
def test_a_single_line_value_is_read_exactly_as_written(value: str, read: str) -> None:
    data, repairs = parse(f"name: a\ndescription: {value}\ntools: Read, Grep\n")
    assert data == {"name": "a", "description": read, "tools": "Read, Grep"}
    assert repairs == [(3, 3, "description", "quoted")]


def test_quoting_leaves_flow_lists_block_headers_and_quoted_values_alone() -> None:
    rewrite = quote_values(
        ["tools: [Read, Grep]", "model: 'x: y'", "color: |", "  a: b", "description: a: b"], KEYS
    )
    assert rewrite.lines == [
        "tools: [Read, Grep]",
        "model: 'x: y'",
        "color: |",
        "  a: b",
        'description: "a: b"',
    ]
    assert [fix.key for fix in rewrite.repairs] == ["description"]


def test_a_colon_value_continued_on_indented_lines_becomes_a_block_scalar_as_opencode_does() -> None:
    data, repairs = parse("name: a\ndescription: Use it when: the user\n  asks for it\ntools: view\n")
    assert data == {"name": "a", "description": "Use it when: the user\nasks for it", "tools": "view"}
    assert repairs == [(3, 4, "description", "block")]


def test_block_values_keeps_the_line_each_written_line_came_from() -> None:
    rewrite = block_values(["name: a", "description: x: y", "  more", "", "tools: v"], KEYS)
    assert rewrite.lines == ["name: a", "description: |-", "  x: y", "  more", "", "tools: v"]
    assert rewrite.origin == [0, 1, 1, 2, 3, 4]


def test_continuation_lines_that_are_not_indented_join_the_value_above() -> None:
    front = (
        "name: brand-guardian\n"
        "description: Use this agent for brand work. Examples:\n"
        "<example>\n"
        'user: "We need a visual identity"\n'
        'assistant: "I will use the brand-guardian agent"\n'
        "</example>\n"
        "\n"
        "color: indigo\n"
        "tools: Write, Read\n"
    )
    data, repairs = parse(front)
    assert data["description"] == (
        "Use this agent for brand work. Examples:\n<example>\n"
        'user: "We need a visual identity"\nassistant: "I will use the brand-guardian agent"\n</example>'
    )
    assert (data["color"], data["tools"]) == ("indigo", "Write, Read")
    assert repairs == [(3, 7, "description", "joined")]
    document = parse_front_matter(f"---\n{front}---\n", PATH, keys=KEYS)
    assert document.line("color") == 9 and document.line("tools") == 10
    assert "lines 4-7 are not indented" in document.repairs[0].describe()


def test_joining_also_quotes_the_other_values() -> None:
    rewrite = join_continuations(["description: a", "b", "model: x: y"], KEYS)
    assert rewrite.lines == ["description: |-", "  a", "  b", 'model: "x: y"']
    assert [fix.kind for fix in rewrite.repairs] == ["joined", "quoted"]


def test_a_repair_that_reads_text_as_a_repeated_key_gives_way_to_the_next() -> None:
    front = 'name: a\ndescription: Use it: when\nuser: "x: one"\nuser: "two": three\ncolor: red\n'
    data, repairs = parse(front)
    assert data == {
        "name": "a",
        "description": 'Use it: when\nuser: "x: one"\nuser: "two": three',
        "color": "red",
    }
    assert repairs == [(3, 5, "description", "joined")]


def test_a_repeated_key_in_valid_yaml_is_still_an_error() -> None:
    with pytest.raises(AgentFileError) as caught:
        parse_front_matter("---\nname: a\nname: b\n---\n", PATH, keys=KEYS)
    assert caught.value.key == "name"


def test_limits_hold_for_repaired_front_matter_too() -> None:
    text = "---\nname: a\ndescription: a: b\ntools: " + "[" * 40 + "]" * 40 + "\n---\n"
    with pytest.raises(AgentFileError) as caught:
        parse_front_matter(text, PATH, keys=KEYS)
    assert "levels deep" in caught.value.message
