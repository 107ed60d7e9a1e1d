from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nestor.agents.frontmatter_fix import fixed_text

PATH = Path("/project/.claude/agents/a.md")


def _front(text: str) -> object:
    return yaml.safe_load(text.removeprefix("\ufeff").replace("\r\n", "\n").split("---\n")[1])


def test_each_repaired_value_becomes_a_block_scalar_and_the_rest_stays_byte_for_byte() -> None:
    text = (
        "---\nname: a\n# kept\ndescription: Use it when: asked\ntools: [Read, Grep]\n"
        "color: C: x  \n---\n\nThe prompt: as written.\n"
    )
    fixed = fixed_text(text, PATH, "claude")
    assert fixed == (
        "---\nname: a\n# kept\ndescription: |-\n  Use it when: asked\ntools: [Read, Grep]\n"
        "color: |-\n  C: x\n---\n\nThe prompt: as written.\n"
    )
    assert _front(fixed) == {
        "name": "a",
        "description": "Use it when: asked",
        "tools": ["Read", "Grep"],
        "color": "C: x",
    }


def test_joined_lines_keep_their_line_breaks_and_crlf_and_bom_are_kept() -> None:
    text = (
        "\ufeff---\r\nname: a\r\ndescription: Examples:\r\n<example>\r\nuser: hi\r\n</example>\r\n"
        "---\r\nBody\r\n"
    )
    fixed = fixed_text(text, PATH, "claude")
    assert fixed is not None and fixed.startswith("\ufeff---\r\n") and "\n" not in fixed.replace("\r\n", "")
    assert _front(fixed) == {"name": "a", "description": "Examples:\n<example>\nuser: hi\n</example>"}


@pytest.mark.parametrize(
    "text",
    [
        "---\nname: a\ndescription: fine\n---\n",
        "---\nname: a\ndescription: Use it\n  when: indented\n---\n",
        "no front matter: at all\n",
    ],
    ids=["valid", "ignored", "none"],
)
def test_nothing_to_fix_or_nothing_known_to_write_is_none(text: str) -> None:
    assert fixed_text(text, PATH, "claude") is None
