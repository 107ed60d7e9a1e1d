"""Shell words from tree-sitter-bash's syntax nodes: their value when static, else their source.

A word is static when the shell gives it a value without expanding anything (``rm``, ``'a b'``,
``"x"``, an escaped letter); a word with an expansion (``$X``, ``$(cmd)``, ``*``) keeps its text as written,
and the rules treat it as not known before it runs (see :mod:`.bash_commands`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node


@dataclass
class Word:
    """A shell word: its value when static (no expansion), else the source text as written."""

    text: str
    static: bool


def word_of(node: Node) -> Word:
    """The word ``node`` is: its value when quoting and escapes alone make it, else its source."""
    kind = node.type
    if kind in ("word", "number"):
        return Word(_unescape(node_text(node)), True)
    if kind == "raw_string":
        return Word(node_text(node)[1:-1], True)
    if kind == "string":
        parts = node.named_children
        if all(part.type == "string_content" for part in parts):
            return Word("".join(_unescape(node_text(part), _DOUBLE_QUOTED_ESCAPES) for part in parts), True)
        return Word(node_text(node), False)
    if kind == "concatenation":
        pieces = [word_of(part) for part in node.named_children]
        if all(piece.static for piece in pieces):
            return Word("".join(piece.text for piece in pieces), True)
        return Word(node_text(node), False)
    return Word(node_text(node), False)


_DOUBLE_QUOTED_ESCAPES = '$`"\\\n'
"""What a backslash escapes inside double quotes; elsewhere it escapes any character."""


def _unescape(text: str, escapable: str | None = None) -> str:
    """``text`` with its backslash escapes undone (only of ``escapable`` characters, when given).

    A backslash before a newline is a line continuation: both go.
    """
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and (escapable is None or text[index + 1] in escapable):
            if text[index + 1] != "\n":
                out.append(text[index + 1])
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def node_text(node: Node) -> str:
    """The source text of ``node``."""
    raw = node.text
    return raw.decode("utf-8", errors="surrogateescape") if raw is not None else ""
