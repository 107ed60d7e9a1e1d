"""Text tree-sitter-bash leaves unparsed where bash expands it: substitutions no rule would see.

The grammar reads a backquoted command inside a parameter expansion's operand
(``${x-`rm a`}``), a backquoted command in a here-document, ``$[x]`` or ``${!x}`` nested in
another expansion, and most of a ``<<-`` here-document's body as plain text (a ``word``, a
``regex``, a ``heredoc_body``), while bash runs what they hold. So every piece of text the syntax
tree leaves as text (its leaves, and the gaps between parsed nodes) is read again here as bash
reads it. An unescaped backquote, ``$(`` (``$((`` included), ``$[``, and ``<(`` or ``>(``
outside double quotes and here-documents or in any ``${...}`` (bash expands an operand's pattern
as if unquoted) start a substitution the tree does not hold: the line cannot be judged. A
``${...}`` in such text is judged as :func:`.bash_expansions.parameter_reason` judges a parsed
one. Text bash does not expand is skipped: single-quoted and ``$'...'`` strings, comments, names,
and the bodies of here-documents whose delimiter is quoted (``<<'EOF'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nestor.permissions.bash_expansions import parameter_reason
from nestor.permissions.bash_words import node_text

if TYPE_CHECKING:
    from tree_sitter import Node

UNPARSED = "a substitution inside ${...} or a here-document is one nestor's parser reads as text"

# Leaves whose text bash does not expand, or that are names and numbers the grammar checked.
_SKIPPED = frozenset(
    {
        "raw_string",
        "ansi_c_string",
        "comment",
        "heredoc_start",
        "heredoc_end",
        "variable_name",
        "special_variable_name",
        "file_descriptor",
        "test_operator",
    }
)
# Inside these, "<(" is text; a substitution, or an expansion's operand, is read unquoted again.
_QUOTING = frozenset({"string", "translated_string", "heredoc_body"})
_UNQUOTING = frozenset({"command_substitution", "process_substitution", "expansion"})
_SUBSTITUTIONS = ("$(", "$[")
_PROCESS_SUBSTITUTIONS = ("<(", ">(")


def unparsed_reasons(root: Node) -> list[str]:
    """Why the text the tree under ``root`` leaves unparsed runs or evaluates code: one reason per finding."""
    reasons: list[str] = []
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, quoted = stack.pop()
        kind = node.type
        if kind in _SKIPPED or (kind == "heredoc_body" and _quoted_delimiter(node)):
            continue
        if kind in _QUOTING:
            quoted = True
        elif kind in _UNQUOTING:
            quoted = False
        for text in _own_text(node):
            reasons.extend(text_reasons(text, quoted=quoted))
        stack.extend((child, quoted) for child in reversed(node.children) if child.is_named)
    return reasons


def text_reasons(text: str, *, quoted: bool) -> list[str]:
    """Why ``text``, expanded by bash as the tree does not show, evaluates code (``quoted``: in ``"..."``)."""
    reasons: list[str] = []
    operands = 0  # how many ${...} the scan is inside
    index = 0
    while index < len(text):
        char = text[index]
        pair = text[index : index + 2]
        if char == "\\":
            index += 2  # an escaped character is text, in words, double quotes and here-documents alike
            continue
        unquoted = not quoted or operands > 0
        if char == "`" or pair in _SUBSTITUTIONS or (unquoted and pair in _PROCESS_SUBSTITUTIONS):
            return [*reasons, UNPARSED]
        if pair == "${":
            end = _closing_brace(text, index + 2)
            if end < 0:
                return [*reasons, f"the expansion {text[index:]} is not one nestor reads"]
            if reason := parameter_reason(text[index : end + 1]):
                reasons.append(reason)
            operands += 1
            index += 2  # its operand is read as the scan goes on
            continue
        if char == "}" and operands:
            operands -= 1
        index += 1
    return reasons


def _own_text(node: Node) -> list[str]:
    """The text of ``node`` that none of its children holds: all of a leaf's, the gaps of others."""
    if not node.children:
        return [node_text(node)] if node.is_named else []
    source = node.text or b""
    gaps: list[str] = []
    position = node.start_byte
    for child in node.children:
        if child.start_byte > position:
            gaps.append(_decode(source[position - node.start_byte : child.start_byte - node.start_byte]))
        position = max(position, child.end_byte)
    if node.end_byte > position:
        gaps.append(_decode(source[position - node.start_byte :]))
    return gaps


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="surrogateescape")


def _quoted_delimiter(body: Node) -> bool:
    """Whether the here-document ``body`` belongs to ``<<'EOF'`` (any quoting): bash expands nothing in it."""
    redirect = body.parent
    if redirect is None:
        return False
    start = next((child for child in redirect.children if child.type == "heredoc_start"), None)
    return start is not None and any(char in node_text(start) for char in "'\"\\")


def _closing_brace(text: str, index: int) -> int:
    """Where the ``}`` closing a ``${`` whose body starts at ``index`` is, or -1."""
    depth = 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if text.startswith("${", index):
            depth += 1
            index += 2
            continue
        if char == "}":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return -1
