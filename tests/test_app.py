from __future__ import annotations

from nestor.app import title_from_prompt


def test_title_is_the_first_line_cut_at_80_characters() -> None:
    assert title_from_prompt("  fix the bug\nin parser.py") == "fix the bug"
    assert title_from_prompt("x" * 100) == "x" * 77 + "..."
    assert title_from_prompt("   ") == ""
