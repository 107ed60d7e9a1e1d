"""Text from the project or a model made safe to show on one line of a terminal."""

from __future__ import annotations


def one_line(text: str) -> str:
    """``text`` with each unprintable character (newlines, terminal escapes, bidi controls) escaped.

    A file name can hold a newline or an escape sequence: shown raw, it would add lines of its own
    to what nestor says it did, or hide part of it.
    """
    return "".join(char if char.isprintable() else ascii(char)[1:-1] for char in text)
