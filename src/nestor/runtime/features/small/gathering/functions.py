"""Python functions as units a small model rewrites whole: find them, read a rewrite, splice it in.

Asked to fix a failing test with free-form edits, the 1.5B model copies the first code it sees
(usually the test) into its edit. Shown one function, the failing test and its output, and asked
for the whole corrected function, it fixes the function. This module finds the functions worth
showing (those a failing test calls, and the frames of its traceback outside the tests), reads
the model's function out of its reply, and re-indents it to fit where the old one was.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
import textwrap
from dataclasses import dataclass

CODE_BLOCK = re.compile(r"```[\w+-]*[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class FunctionSpan:
    """A function in a file: its name and lines (1-based, inclusive, decorators excluded)."""

    path: str
    name: str
    start: int
    end: int

    def text(self, source: str) -> str:
        """The function's lines in ``source``, with their line ends."""
        lines = source.splitlines(keepends=True)
        return "".join(lines[self.start - 1 : self.end])

    @property
    def label(self) -> str:
        """``path:start`` and the name, for prompts and reports."""
        return f"{self.name} ({self.path}:{self.start})"

    @classmethod
    def of(cls, path: str, node: ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionSpan:
        """The span of a parsed function of ``path``."""
        return cls(path, node.name, node.lineno, node.end_lineno or node.lineno)


def functions_named(path: str, source: str, names: set[str]) -> list[FunctionSpan]:
    """The functions and methods called one of ``names`` defined in ``source``."""
    tree = parsed(source)
    return [
        FunctionSpan.of(path, node)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in names
    ]


def methods_of(path: str, source: str, classes: set[str]) -> list[FunctionSpan]:
    """The methods defined in the body of the classes called one of ``classes`` in ``source``."""
    return [
        FunctionSpan.of(path, node)
        for owner in ast.walk(parsed(source))
        if isinstance(owner, ast.ClassDef) and owner.name in classes
        for node in owner.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def function_at(path: str, source: str, line: int) -> FunctionSpan | None:
    """The innermost function or method around ``line`` of ``source``."""
    node = _innermost_function(source, line)
    return None if node is None else FunctionSpan.of(path, node)


def without_function(source: str, span: FunctionSpan) -> str:
    """``source`` with the function of ``span`` taken out, its decorators with it."""
    lines = source.splitlines(keepends=True)
    start = span.start - 1
    while start > 0 and lines[start - 1].lstrip().startswith("@"):
        start -= 1
    return "".join(lines[:start]).rstrip("\n") + "\n" + "".join(lines[span.end :])


@functools.lru_cache(maxsize=16)
def parsed(source: str) -> ast.Module:
    """``source`` parsed; an empty module when it is not valid Python.

    One answer looks at the same few files many times (each class's ``__init__``, each default):
    the trees are kept, and callers only read them.
    """
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return ast.Module(body=[], type_ignores=[])


def called_names(source: str, line: int) -> list[str]:
    """The functions and classes the function around ``line`` calls (builtins and asserts left out)."""
    node = _innermost_function(source, line)
    if node is None:
        return []
    names: list[str] = []
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            function = call.func
            name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
            if name and name not in _BUILTIN_NAMES and not name.startswith("assert"):
                names.append(name)
    return names


_BUILTIN_NAMES = frozenset(dir(builtins)) | {"raises", "approx", "fixture", "mark", "parametrize", "skip"}


def _innermost_function(source: str, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    best: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for node in ast.walk(parsed(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            end = node.end_lineno or node.lineno
            if node.lineno <= line <= end and (best is None or node.lineno >= best.lineno):
                best = node
    return best


def rewritten_function(reply: str, span: FunctionSpan, original: str) -> str | None:
    """The model's new version of ``span`` from ``reply``, indented as ``original``; None if unusable.

    The reply's code (its first fenced block, else all of it) must parse and define a function
    of the same name; decorators it repeats are dropped (the file keeps its own).
    """
    match = CODE_BLOCK.search(reply)
    code = textwrap.dedent(match.group(1) if match else reply).strip("\n")
    lines = code.splitlines()
    start = next(
        (i for i, line in enumerate(lines) if re.match(rf"\s*(?:async\s+)?def\s+{span.name}\b", line)), None
    )
    if start is None:
        return None
    code = textwrap.dedent("\n".join(function_lines(lines[start:])))
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    first = tree.body[0] if tree.body else None
    if not isinstance(first, ast.FunctionDef | ast.AsyncFunctionDef) or first.name != span.name:
        return None
    code = "\n".join(code.splitlines()[: first.end_lineno or len(code.splitlines())])
    indent = original[: len(original) - len(original.lstrip())]
    rewritten = textwrap.indent(code, indent, lambda line: bool(line.strip())) + "\n"
    return None if rewritten == original else rewritten


def function_lines(lines: list[str]) -> list[str]:
    """The lines of the function starting at ``lines[0]``: up to the first line back at its margin.

    Small models echo the prompt's markup (``</function>``) or add prose after the function.
    """
    margin = len(lines[0]) - len(lines[0].lstrip())
    kept = [lines[0]]
    for line in lines[1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= margin and not line.lstrip().startswith(")"):
            break
        kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    return kept
