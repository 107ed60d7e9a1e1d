from __future__ import annotations

from pathlib import Path

import pytest

from nestor.agents.frontmatter import parse_front_matter
from nestor.core.errors import AgentFileError

PATH = Path("/project/.nestor/agents/a.md")


def test_parses_data_body_and_key_lines() -> None:
    text = "---\nname: a\ndescription: Does things\ntools:\n  - view\n  - grep\n---\n\nBe brief.\n"
    document = parse_front_matter(text, PATH)
    assert document.data == {"name": "a", "description": "Does things", "tools": ["view", "grep"]}
    assert document.body == "Be brief."
    assert document.line("name") == 2
    assert document.line("description") == 3
    assert document.line("tools") == 4
    assert document.line("tools", 1) == 6
    assert document.line("missing") == 1
    assert document.line() == 1


def test_mapping_values_record_sub_key_lines() -> None:
    document = parse_front_matter("---\npermission:\n  edit: deny\n  bash: ask\n---\n", PATH)
    assert document.line("permission", "bash") == 4
    assert document.line("permission", "nope") == 2


def test_file_without_front_matter_is_all_body() -> None:
    document = parse_front_matter("You are helpful.\n---\nnot yaml\n", PATH)
    assert document.data == {}
    assert document.body.startswith("You are helpful.")


def test_empty_front_matter_and_crlf_and_bom() -> None:
    assert parse_front_matter("---\n---\nbody", PATH).data == {}
    document = parse_front_matter("\ufeff---\r\nname: a\r\n---\r\nbody\r\n", PATH)
    assert document.data == {"name": "a"}
    assert document.body == "body"


def test_unclosed_front_matter_is_an_error_on_line_one() -> None:
    with pytest.raises(AgentFileError) as caught:
        parse_front_matter("---\nname: a\nbody\n", PATH)
    assert caught.value.line == 1
    assert caught.value.path == str(PATH)
    assert "never closed" in caught.value.message


def test_yaml_no_repair_reads_is_ignored_with_its_line_and_cause_and_the_body_kept() -> None:
    text = "---\nname: a\ndescription: Use it\n  when: the line is indented\nmodel: x\n---\nbody\n"
    document = parse_front_matter(text, PATH)
    assert document.data == {} and document.body == "body" and document.present
    ignored = document.ignored
    assert ignored is not None and ignored.kind == "ignored" and ignored.line == 4
    assert ignored.detail and "read-only tools" in ignored.describe()


def test_a_colon_in_a_value_is_quoted_as_claude_code_does_on_its_line() -> None:
    document = parse_front_matter("---\nname: a\ndescription: a: b\ntools: [view]\n---\n", PATH)
    assert document.data == {"name": "a", "description": "a: b", "tools": ["view"]}
    assert document.ignored is None
    [repair] = document.repairs
    assert (repair.line, repair.end_line, repair.key, repair.kind) == (3, 3, "description", "quoted")
    assert "': '" in repair.describe() and "Claude Code" in repair.describe()
    assert document.line("tools") == 4


def test_front_matter_must_be_a_mapping() -> None:
    with pytest.raises(AgentFileError) as caught:
        parse_front_matter("---\n- a\n- b\n---\nbody", PATH)
    assert "mapping" in caught.value.message
    assert "list" in caught.value.message
    assert caught.value.line == 2


def test_duplicate_keys_are_errors_naming_the_key() -> None:
    with pytest.raises(AgentFileError) as caught:
        parse_front_matter("---\nname: a\nmodel: x\nname: b\n---\n", PATH)
    assert caught.value.key == "name"
    assert caught.value.line == 4
    assert "line 2" in caught.value.message


def billion_laughs() -> str:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for previous, name in zip("abcdefghi", "bcdefghij", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
    return "---\nname: a\n" + "\n".join(lines) + "\ntools: *j\n---\nbody\n"


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        (billion_laughs(), "more than 10,000 values"),
        ("---\nname: a\ntools: " + "[" * 100_000 + "]" * 100_000 + "\n---\n", "levels deep"),
        ("---\nname: a\ntools: " + "[" * 40 + "]" * 40 + "\n---\n", "levels deep"),
        ("---\nname: a\ntools: " + "{a: " * 100_000 + "1" + "}" * 100_000 + "\n---\n", "levels deep"),
        ("---\nname: a\ntools:\n  " + "- " * 100_000 + "x\n---\n", "levels deep"),
        ("---\nname: a\ntools: [" + ", ".join(["view"] * 10_001) + "]\n---\n", "more than 10,000 values"),
    ],
    ids=[
        "billion laughs",
        "100,000 nested lists",
        "40 nested lists",
        "100,000 nested mappings",
        "100,000 nested block lists",
        "10,001 values",
    ],
)
def test_front_matter_too_large_once_read_is_one_error(text: str, cause: str) -> None:
    with pytest.raises(AgentFileError) as caught:
        parse_front_matter(text, PATH)
    assert caught.value.message.startswith(f"{PATH}:2: the front matter ") and cause in caught.value.message
    assert caught.value.path == str(PATH) and caught.value.hint


def test_a_few_aliases_are_still_fine() -> None:
    document = parse_front_matter("---\nname: &n a\ndescription: *n\ntools: [view]\n---\n", PATH)
    assert document.data == {"name": "a", "description": "a", "tools": ["view"]}
    assert document.values == 1 + 3 * 2 + 1  # the mapping, its keys and values, the list's item
