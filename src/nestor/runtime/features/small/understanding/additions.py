"""Requests to add a function, method or property: what to add, where, and the code the model wrote.

Asked for SEARCH/REPLACE blocks to add a method, the 1.5B model loses the format; asked to write
the one method, shown its class, it writes a fair one. So the harness reads the request itself
(:func:`read_addition`), asks for the new code alone, and puts it at the end of the class itself;
then it asks, the same way, for a test module.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from typing import Literal

from nestor.runtime.features.small.gathering.functions import CODE_BLOCK, function_lines, parsed

MemberKind = Literal["method", "property", "function"]

_ADD = re.compile(
    r"(?:^|[.!?]\s+)\s*(?:please\s+|can\s+you\s+|could\s+you\s+)?(?:add|implement|write|create)\b|"
    r"\b(?:i'?d\s+like|i\s+want|i\s+need|we\s+need|please\s+add)\s+(?:a|an|the)\b",
    re.I,
)
# "Add a test for frequencies", "write unit tests that check Inventory.remove": tests of code
# that exists, not of code the request adds.
_TESTS_OF = re.compile(
    r"\b(?:add|write|create)\s+(?:a\s+|an\s+|some\s+|new\s+|more\s+|unit\s+|regression\s+|pytest\s+)*"
    r"tests?(?:\s+(?:case|cases|function|functions))?\s+(?:for|of|that|which|to|covering|checking)\b",
    re.I,
)
_BACKTICKED_NAME = re.compile(r"`(?:[\w.]+\.)?([A-Za-z_]\w*)\s*(?:\([^`]*\))?`")
_NAMED_KIND = re.compile(
    r"\b([A-Za-z_]\w*)\s*(?:\([^)]*\))?\s+(method|property|function|classmethod|staticmethod)\b", re.I
)
_KIND = re.compile(r"\b(method|property|function|classmethod|staticmethod)\b", re.I)
_OWNER = re.compile(r"\b(?:to|in|on|into|for)\s+(?:the\s+)?(?:class\s+)?`?([A-Z]\w*)`?")
_MODULE = re.compile(r"\b(?:to|in|into)\s+(?:the\s+)?`?([a-z_][\w.]*?)`?(?:\.py)?(?:\s+module)?\b(?!\()")


@dataclass(frozen=True, slots=True)
class Addition:
    """What a request asks to add.

    Attributes:
        name: The new function's name.
        kind: A method, a property, or a module-level function.
        owner: The class it goes in (None for a function, or when the request names none).

    """

    name: str
    kind: MemberKind
    owner: str | None
    modules: tuple[str, ...] = ()
    """For a function: the words the request says it goes in (``dicttoolz`` in "a function in dicttoolz")."""


def read_addition(prompt: str) -> Addition | None:
    """The function, method or property ``prompt`` asks to add; None when it asks for something else."""
    if not _ADD.search(prompt):
        return None
    named = _BACKTICKED_NAME.search(prompt) or _NAMED_KIND.search(prompt)
    kind_match = _KIND.search(prompt)
    if named is None or kind_match is None:
        return None
    word = kind_match.group(1).lower()
    kind: MemberKind = "property" if word == "property" else "function" if word == "function" else "method"
    owners = [match.group(1) for match in _OWNER.finditer(prompt) if match.group(1) != named.group(1)]
    owner = owners[0] if owners else None
    if owner is None and kind != "function":
        return None
    if owner is not None:
        return Addition(named.group(1), kind, owner)
    modules = tuple(
        word
        for word in (match.group(1).rsplit(".", 1)[-1] for match in _MODULE.finditer(prompt))
        if word not in {"the", "a", "an", "it", "this", "that", "its", "them", "me", "us"}
    )
    return Addition(named.group(1), "function", None, modules)


def asks_for_tests_of_code(prompt: str) -> bool:
    """Whether ``prompt`` asks for tests of existing code ("add a test for frequencies")."""
    return _TESTS_OF.search(prompt) is not None


def class_span(source: str, name: str) -> tuple[int, int] | None:
    """The first and last line (1-based) of the class ``name`` in ``source``."""
    for node in ast.walk(parsed(source)):
        if isinstance(node, ast.ClassDef) and node.name == name:
            first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            return first, node.end_lineno or node.lineno
    return None


def new_function(reply: str, name: str) -> str | None:
    """The function ``name`` the model wrote in ``reply`` (decorators included), dedented; or None.

    It must parse and define ``name``; what else the reply holds is left out.
    """
    match = CODE_BLOCK.search(reply)
    lines = textwrap.dedent(match.group(1) if match else reply).strip("\n").splitlines()
    start = next(
        (i for i, line in enumerate(lines) if re.match(rf"\s*(?:async\s+)?def\s+{name}\b", line)), None
    )
    if start is None:
        return None
    decorators = start
    while decorators > 0 and lines[decorators - 1].lstrip().startswith("@"):
        decorators -= 1
    code = textwrap.dedent("\n".join(lines[decorators:start] + function_lines(lines[start:])))
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    first = tree.body[0] if tree.body else None
    if not isinstance(first, ast.FunctionDef | ast.AsyncFunctionDef) or first.name != name:
        return None
    return "\n".join(code.splitlines()[: first.end_lineno]) + "\n"


def written_test_module(reply: str) -> str | None:
    """The test module the model wrote in ``reply``: its code, when it parses and defines a test."""
    match = CODE_BLOCK.search(reply)
    code = textwrap.dedent(match.group(1) if match else reply).strip("\n") + "\n"
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    tests = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]
    return code if tests else None


def import_line(path: str, name: str) -> str | None:
    """``from package.module import name`` for a project file (``src/`` layouts included)."""
    parts = path.removesuffix(".py").split("/")
    if parts and parts[0] in {"src", "lib"}:
        parts = parts[1:]
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return f"from {'.'.join(parts)} import {name}" if parts else None


def merged_test_module(existing: str, written: str) -> str:
    """``existing`` with what the model's ``written`` module adds to it.

    Its imports that ``existing`` lacks go after the existing ones; its other top-level code goes
    at the end. A test function or class whose name ``existing`` already has is renamed with an
    ``_added`` suffix, so it neither replaces nor shadows the one there.
    """
    tree = parsed(existing)
    taken = {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    present = {line.strip() for line in existing.splitlines()}
    written_lines = written.splitlines()
    imports: list[str] = []
    code: list[str] = []
    for node in parsed(written).body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        text = "\n".join(written_lines[first - 1 : node.end_lineno or node.lineno])
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports.extend(line for line in text.splitlines() if line.strip() not in present)
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name in taken:
            text = re.sub(
                rf"\b(def|class)\s+{re.escape(node.name)}\b", rf"\1 {node.name}_added", text, count=1
            )
        code.append(text)
    lines = existing.rstrip("\n").splitlines()
    last_import = max(
        (
            node.end_lineno or node.lineno
            for node in tree.body
            if isinstance(node, ast.Import | ast.ImportFrom)
        ),
        default=0,
    )
    merged = [*lines[:last_import], *imports, *lines[last_import:]]
    return "\n".join(merged) + "\n\n\n" + "\n\n\n".join(code) + "\n"


def uses(module: str, name: str) -> bool:
    """Whether ``module``'s code (not only its imports) uses ``name``."""
    tree = parsed(module)
    return any(
        (isinstance(node, ast.Name) and node.id == name)
        or (isinstance(node, ast.Attribute) and node.attr == name)
        for node in ast.walk(tree)
    )


def exported(source: str, name: str) -> str | None:
    """``source`` with ``name`` added to its ``__all__``; None when it has no literal ``__all__``.

    A module that lists its public names (``from .dicttoolz import *`` exports only those) must
    list a new public function too.
    """
    for node in parsed(source).body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets)
            and isinstance(node.value, ast.Tuple | ast.List)
        ):
            names = [element.value for element in node.value.elts if isinstance(element, ast.Constant)]
            if name in names or node.value.end_lineno is None or node.value.end_col_offset is None:
                return None
            lines = source.splitlines(keepends=True)
            closing = node.value.end_lineno - 1
            line = lines[closing]
            before = line[: node.value.end_col_offset - 1].rstrip()
            comma = "" if before.endswith(",") or before.endswith(("(", "[")) else ","
            lines[closing] = f"{before}{comma} {name!r}{line[node.value.end_col_offset - 1 :]}"
            if before.endswith(("(", "[")):
                lines[closing] = f"{before}{name!r},{line[node.value.end_col_offset - 1 :]}"
            return "".join(lines)
    return None
