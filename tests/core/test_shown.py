from __future__ import annotations

from nestor.core.shown import one_line


def test_newlines_escapes_and_bidi_controls_are_escaped_and_printable_text_is_kept() -> None:
    assert one_line("a\nb") == "a\\nb"
    assert one_line("x\x1b[2Jy\r") == "x\\x1b[2Jy\\r"
    assert one_line("evil\u202etxt.exe") == "evil\\u202etxt.exe"
    assert one_line("café/ü b.txt") == "café/ü b.txt"
