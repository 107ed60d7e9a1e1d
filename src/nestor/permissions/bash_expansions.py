"""Expansions that run code the parser never saw: they make a command line unjudgeable.

``x='$(rm f)'; ls ${x@P}`` runs ``rm f``: prompt expansion evaluates the value of ``x``, which is
text to the parser. So does every arithmetic context that reads a variable, because bash
evaluates a variable's value as an expression and an array subscript in it runs command
substitutions (``x='a[$(rm f)]'; ls $((x))``): ``$((x))``, ``$[x]``, ``((x))``, ``for ((..))``,
array subscripts (``${a[$i]}``, ``a[i]=1``, ``([i]=1)``), the offset and length of ``${s:i:n}``,
``[[ x -eq y ]]`` and the name ``-v`` tests. Indirect expansion (``${!x}``) reads a name from a
variable, which may be such a subscript. Assignments to the variables of :mod:`.variables`
change what later commands run. :func:`evaluation_reasons` finds them all in a syntax tree;
arithmetic made only of numbers is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from nestor.permissions.bash_words import node_text
from nestor.permissions.variables import variable_problem

if TYPE_CHECKING:
    from tree_sitter import Node

_NUMBER = re.compile(r"\d+#[0-9A-Za-z@_]+|0[xX][0-9A-Fa-f]+|\d+")
# Parameters whose value is always a number: $#, $?, $$, $!, and the length of a plain variable.
_NUMERIC_PARAMETER = re.compile(r"\$[#?$!]|\$\{#(?:[A-Za-z_]\w*|[#?$!@*])\}")
_ARITHMETIC_OPERATORS = frozenset(" \t\n+-*/%<>=!&|^~?:,()")
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_PARAMETER = re.compile(r"([A-Za-z_]\w*|\d+|[@*#?$!-])(\[([^\]]*)\])?")
_NAME_LIST = re.compile(r"[A-Za-z_]\w*[*@]|[A-Za-z_]\w*\[[@*]\]")
_ARITHMETIC_OPENERS = frozenset({"$((", "((", "$["})

ARITHMETIC = "arithmetic with a variable evaluates that variable's value, which can run commands"
SUBSCRIPT = "an array subscript is evaluated as arithmetic, which can run commands"


def literal_arithmetic(text: str) -> bool:
    """True when ``text`` is arithmetic made of numbers and operators alone (no variable, no expansion)."""
    rest = _NUMBER.sub(" ", _NUMERIC_PARAMETER.sub("0", text))
    return all(char in _ARITHMETIC_OPERATORS for char in rest)


def safe_subscript(index: str) -> bool:
    """True for a subscript that evaluates nothing: ``@``, ``*`` or numbers."""
    return index.strip() in ("@", "*") or literal_arithmetic(index)


def evaluation_reasons(root: Node) -> list[str]:
    """Why the code under ``root`` runs what no rule can see: one reason per finding, in order."""
    return [reason for node in _descendants(root) if (reason := _reason(node))]


def _descendants(root: Node) -> Iterator[Node]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))


def _reason(node: Node) -> str:
    kind = node.type
    if kind == "expansion":
        return parameter_reason(node_text(node))
    if kind in ("arithmetic_expansion", "compound_statement", "c_style_for_statement"):
        return _arithmetic_reason(node)
    if kind == "command_substitution" and node_text(node).startswith("$(("):
        # tree-sitter reads "$((x))" in a here-document as a substitution of a subshell.
        return "" if literal_arithmetic(node_text(node)[3:-2]) else ARITHMETIC
    if kind == "subscript":
        text = node_text(node)
        return "" if safe_subscript(text[text.find("[") + 1 : text.rfind("]")]) else SUBSCRIPT
    if kind == "array":
        return _array_reason(node)
    if kind == "test_operator":
        return _test_reason(node)
    if kind in ("variable_assignment", "for_statement"):
        # NAME=value, and the variable of "for NAME in" and "select NAME in".
        name = node.child_by_field_name("name") or node.child_by_field_name("variable")
        if name is not None and name.type == "variable_name":
            return variable_problem(node_text(name))
    return ""


def parameter_reason(text: str) -> str:
    """Why the parameter expansion ``${...}`` in ``text`` evaluates code, or ""."""
    body = text[2:-1]
    if body.startswith("!") and len(body) > 1:
        # ${!prefix*} and ${!a[@]} list names and keys; anything else reads a name from a value.
        return (
            ""
            if _NAME_LIST.fullmatch(body[1:])
            else "an indirect expansion (${!x}) evaluates a name a variable holds"
        )
    if body.startswith("#") and len(body) > 1:
        body = body[1:]
    match = _PARAMETER.match(body)
    if match is None:
        return f"the expansion {text} is not one nestor reads"
    if match.group(2) and not safe_subscript(match.group(3)):
        return SUBSCRIPT
    operator = body[match.end() :]
    if operator.startswith(("=", ":=")) and (problem := variable_problem(match.group(1))):
        return problem  # ${PATH:=x} assigns when unset
    if operator.startswith("@P"):
        return "a prompt expansion (${x@P}) runs the command substitutions in a variable's value"
    if operator.startswith(":") and operator[1:2] not in ("-", "=", "?", "+"):
        # ${s:offset:length}: both are arithmetic.
        return "" if literal_arithmetic(operator[1:]) else ARITHMETIC
    return ""


def _arithmetic_reason(node: Node) -> str:
    """Arithmetic between ``((``/``$((``/``$[`` and its closing token, when it reads anything but numbers."""
    inside = False
    for child in node.children:
        token = child.type
        if not inside:
            inside = token in _ARITHMETIC_OPENERS
            continue
        if token in ("))", "]"):
            return ""
        if token != ";" and not literal_arithmetic(node_text(child)):
            return ARITHMETIC
    return ""


def _array_reason(node: Node) -> str:
    """``a=([i]=x)``: an explicit subscript in an array literal (tree-sitter leaves it as words)."""
    for element in node.named_children:
        text = node_text(element)
        if text.startswith("[") and "]=" in text and not safe_subscript(text[1 : text.index("]=")]):
            return SUBSCRIPT
    return ""


def _test_reason(node: Node) -> str:
    """``[[ x -eq y ]]`` evaluates both sides as arithmetic; ``-v NAME`` a name's subscript."""
    operator = node_text(node)
    parent = node.parent
    if parent is None:
        return ""
    operands = [child for child in parent.named_children if child != node]
    if operator == "-v":
        for operand in operands:
            text = node_text(operand)
            if not re.fullmatch(r"[A-Za-z_]\w*(\[\d+\])?", text):
                return "a -v test evaluates the subscript of the name it is given"
        return ""
    if operator not in _ARITHMETIC_TESTS or not _in_double_brackets(node):
        return ""
    if all(literal_arithmetic(node_text(operand)) for operand in operands):
        return ""
    return ARITHMETIC


def _in_double_brackets(node: Node) -> bool:
    current = node.parent
    while current is not None and current.type != "test_command":
        current = current.parent
    return current is not None and current.child_count > 0 and current.children[0].type == "[["
