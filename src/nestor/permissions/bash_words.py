"""Shell words from tree-sitter-bash's syntax nodes: their value when static, else their source.

A word is static when the shell gives it a value without expanding anything (``rm``, ``'a b'``,
``"x"``, an escaped letter); a word with an expansion (``$X``, ``$(cmd)``) keeps its text as
written, and the rules treat it as not known before it runs (see :mod:`.bash_commands`). A word
is single when it stays one word however it expands: an unquoted expansion, a glob (``*.txt``) or
a brace expansion (``r{m,}``) may make it several, which matters where a word's place decides
what it is (a command name, a wrapper's option).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node


@dataclass
class Word:
    """A shell word: its value when static (no expansion), else the source text as written.

    Attributes:
        text: The value, or the source when not static.
        static: True when quoting and escapes alone make the value.
        single: True when it is one word once expanded, whatever its value: no unquoted expansion
            or glob splits it or removes it (``"$x"`` and ``<(cmd)`` are one word, ``$x`` and
            ``*.txt`` maybe several or none).

    """

    text: str
    static: bool
    single: bool = True


def word_of(node: Node) -> Word:
    """The word ``node`` is: its value when quoting and escapes alone make it, else its source."""
    kind = node.type
    if kind in ("word", "number"):
        raw = node_text(node)
        return Word(_unescape(raw), True, not _has_unquoted_glob(raw) and not expands_braces(raw))
    if kind == "raw_string":
        return Word(node_text(node)[1:-1], True)
    if kind == "string":
        parts = node.named_children
        if all(part.type == "string_content" for part in parts):
            return Word("".join(_unescape(node_text(part), _DOUBLE_QUOTED_ESCAPES) for part in parts), True)
        text = node_text(node)
        return Word(text, False, "$@" not in text and "[@]" not in text and "${@" not in text)
    if kind == "concatenation":
        pieces = [word_of(part) for part in node.named_children]
        single = all(piece.single for piece in pieces) and not expands_braces(node_text(node))
        if all(piece.static for piece in pieces):
            return Word("".join(piece.text for piece in pieces), True, single)
        return Word(node_text(node), False, single)
    return Word(node_text(node), False, kind in ("process_substitution", "ansi_c_string"))


def tilde_prefixes(node: Node) -> list[tuple[int, str]]:
    """The tilde prefixes bash expands in the static word ``node``: (where in its value, the prefix).

    A word starting with an unquoted ``~`` starts with one, up to its first unquoted ``/``: ``~``
    (the home directory), ``~user``, ``~+`` (the current directory), ``~-`` (the previous one),
    ``~N``, ``~+N``, ``~-N`` (the directory stack). A prefix with a quoted or escaped character in
    it is left as written (``~"+"/x``, an escaped ``~``). In a word shaped as an assignment (``a=~/x``,
    ``a=b:~+/y``), an unquoted ``~`` after its first ``=`` or a ``:`` starts one too (up to a ``/``
    or ``:``): bash expands those in a redirection's file and a command's arguments as well. A word
    that is not static has none here (it is not known before the line runs anyway).
    """
    characters = _characters(node)
    if characters is None:
        return []
    starts = [0]
    literal = "".join("\0" if quoted else char for char, quoted in characters)
    if shape := _ASSIGNMENT_SHAPE.match(literal):
        equals = shape.end() - 1
        starts += [equals + 1] + [
            index + 1 for index in range(equals + 1, len(literal)) if literal[index] == ":"
        ]
    found: list[tuple[int, str]] = []
    for start in starts:
        if literal[start : start + 1] != "~":
            continue
        ends = "/" if start == 0 else "/:"
        end = next((index for index in range(start, len(literal)) if literal[index] in ends), len(literal))
        if "\0" not in literal[start:end]:
            found.append((start, literal[start:end]))
    return found


_ASSIGNMENT_SHAPE = re.compile(r"[A-Za-z_]\w*(?:\[[^\]]*\])?\+?=")


def _characters(node: Node) -> list[tuple[str, bool]] | None:
    """The characters of the static word ``node``, each with whether it is quoted; None if not static."""
    kind = node.type
    if kind in ("word", "number"):
        raw = node_text(node)
        characters: list[tuple[str, bool]] = []
        index = 0
        while index < len(raw):
            if raw[index] == "\\" and index + 1 < len(raw):
                if raw[index + 1] != "\n":
                    characters.append((raw[index + 1], True))
                index += 2
                continue
            characters.append((raw[index], False))
            index += 1
        return characters
    if kind in ("raw_string", "string"):
        word = word_of(node)
        return [(char, True) for char in word.text] if word.static else None
    if kind == "concatenation":
        parts = [_characters(part) for part in node.named_children]
        return (
            [character for part in parts if part is not None for character in part]
            if all(part is not None for part in parts)
            else None
        )
    return None


def with_placeholder(words: list[Word], token: str) -> list[Word]:
    """``words`` with each word holding ``token`` made unknown: xargs -I and find -exec replace it.

    ``xargs -I{} sh -c '{}'`` runs what it reads as a shell line: the word is known only then.
    """
    return [Word(word.text, False, single=False) if token and token in word.text else word for word in words]


def backquoted_source(node: Node) -> str | None:
    """The command line a backquoted substitution runs, when it is not the text between its backquotes.

    Between backquotes bash removes the backslash before a backquote, ``$`` and a backslash (and
    before ``"`` inside double quotes), then parses what is left: a backquote escaped there starts
    a nested substitution, which the grammar reads as an escaped character. None when no backslash
    is removed.
    """
    if node.type != "command_substitution" or not node.children or node.children[0].type != "`":
        return None
    content = node_text(node)[1:-1]
    escapable = "`$\\" + ('"' if _in_double_quotes(node) else "")
    unescaped = _unescape(content, escapable)
    return unescaped if unescaped != content else None


def _in_double_quotes(node: Node) -> bool:
    parent = node.parent
    while parent is not None and parent.type not in ("command_substitution", "process_substitution"):
        if parent.type in ("string", "translated_string"):
            return True
        parent = parent.parent
    return False


def _has_unquoted_glob(raw: str) -> bool:
    escaped = False
    for char in raw:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "*?[":
            return True
    return False


def expands_braces(raw: str) -> bool:
    """True when the word written ``raw`` has a brace expansion: ``r{m,}`` is the two words ``rm r``."""
    depth = 0
    quote = ""
    index = 0
    while index < len(raw):
        char = raw[index]
        if quote:
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"':
                index += 1
        elif char == "\\":
            index += 1
        elif char in "'\"":
            quote = char
        elif char == "{" and raw[index - 1 : index] != "$":
            depth += 1
        elif char == "}":
            depth = max(depth - 1, 0)
        elif depth and (char == "," or raw.startswith("..", index)):
            return True
        index += 1
    return False


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
