"""Fixing a failing test line by line, with the model filling in the middle of the code.

A 1.5B code model asked in chat to rewrite a function with a bug mostly copies it unchanged. The
same model, shown the code around one statement with that statement cut out, writes what belongs
there, and for a wrong statement that is usually the right one: it was trained on far more code
than chat. So the harness cuts out the statements of the suspect functions one at a time (the
lines a traceback names first), has the model fill each gap in, and tries its version of one,
two or three lines with the project's tests (the AlphaRepair idea, with a code model's own
fill-in-the-middle tokens instead of a masked language model).

This module plans the gaps and reads the candidates; the harness asks the model and runs the tests.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

from nestor.runtime.features.small.gathering.functions import FunctionSpan, parsed
from nestor.runtime.features.small.gathering.languages import language_of, parses_cleanly

CONTEXT_BEFORE = 25
"""Lines above the function shown with every gap: its neighbours show the file's ways."""
CONTEXT_AFTER = 4
"""Lines below the function shown after its end."""
MAX_CANDIDATE_LINES = 3
_CONDITION = re.compile(r"^\s*(?:if|elif|while|assert)\b|[<>]=?|[!=]=|\bis\s+not\b|\bnot\s+in\b")
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True, slots=True)
class Gap:
    """Statement lines cut out of a function for the model to fill in (1-based, inclusive)."""

    span: FunctionSpan
    first: int
    last: int

    def context(self, source: str) -> tuple[str, str]:
        """The code before and after the gap, as the model sees it: the function and around it."""
        lines = source.splitlines(keepends=True)
        start = max(0, self.span.start - 1 - CONTEXT_BEFORE)
        end = min(len(lines), self.span.end + CONTEXT_AFTER)
        return "".join(lines[start : self.first - 1]), "".join(lines[self.last : end])

    def cut(self, source: str) -> str:
        """The gap's lines in ``source``."""
        return "".join(source.splitlines(keepends=True)[self.first - 1 : self.last])

    def filled(self, source: str, lines: str) -> str:
        """The function's text with the gap replaced by ``lines``."""
        all_lines = source.splitlines(keepends=True)
        return "".join(
            [*all_lines[self.span.start - 1 : self.first - 1], lines, *all_lines[self.last : self.span.end]]
        )


def gaps(
    source: str,
    span: FunctionSpan,
    first_lines: Collection[int] = (),
    ran: Callable[[int], bool] | None = None,
) -> list[Gap]:
    """The statements of ``span`` to cut out one at a time, likeliest first.

    A simple statement is cut line by line; a compound one (``if``, ``for``, ``with``...) only
    when its header is one line, and then only that line. The docstring and ``try:`` are never cut.

    Args:
        source: The file's text.
        span: The function.
        first_lines: Lines a traceback names: those first, then the lines nearest them (above
            before below: the condition before a ``raise`` decides it), then the rest in order.
        ran: Whether a line ran in the failing test, when that is known: lines that did not
            run cannot have made it fail, and are left out.

    """
    lines = source.splitlines()
    if language_of(span.path) not in (None, "python"):
        return _ordered(_line_gaps(lines, span), lines, span, first_lines, ran)
    function = _function(source, span)
    if function is None:
        return []
    found: list[Gap] = []
    for node in ast.walk(function):
        if not isinstance(node, ast.stmt) or node is function:
            continue
        if _is_docstring(node, function) or isinstance(node, _DEFINITIONS):
            continue
        if isinstance(node, ast.Try):  # ``try:`` has nothing to fill in; its body is cut on its own
            continue
        body = getattr(node, "body", None)
        if isinstance(body, list) and body:
            header_end = body[0].lineno - 1  # pyright: ignore[reportUnknownMemberType]
            if header_end == node.lineno:
                found.append(Gap(span, node.lineno, node.lineno))
            continue
        end = node.end_lineno or node.lineno
        # A statement over several lines is cut line by line: the model fills in one line of an
        # expression well, and rarely rewrites a whole long one as it was.
        found.extend(
            Gap(span, line, line)
            for line in range(node.lineno, end + 1)
            if lines[line - 1].strip(" \t()[]{},:")  # a line of closing brackets says nothing
        )
    return _ordered(found, lines, span, first_lines, ran)


def _line_gaps(lines: list[str], span: FunctionSpan) -> list[Gap]:
    """Each line of a function's body that says something, for languages read without ``ast``.

    The signature line, lines of brackets alone, blank lines and comments are not cut; a span of
    one line (a top-level ``const``) is cut whole.
    """
    first = span.start if span.start == span.end else span.start + 1
    return [
        Gap(span, number, number)
        for number in range(first, min(span.end, len(lines)) + 1)
        if lines[number - 1].strip(" \t(){}[];,")
        and not lines[number - 1].lstrip().startswith(("//", "/*", "*", "#"))
    ]


def _ordered(
    found: list[Gap],
    lines: list[str],
    span: FunctionSpan,
    first_lines: Collection[int],
    ran: Callable[[int], bool] | None,
) -> list[Gap]:
    """``found`` without the lines that did not run, likeliest first (see :func:`gaps`)."""
    if ran is not None:
        found = [gap for gap in found if ran(gap.first)]
    frames = [line for line in first_lines if span.start <= line <= span.end]

    def distance(gap: Gap) -> float:
        if not frames:
            # No line of it in a traceback (a wrong result): its conditions first, where most
            # such bugs are (a < that should be <=), then the rest in order.
            return 0.0 if _CONDITION.search(lines[gap.first - 1]) else 1.0
        # A line above a frame line counts as nearer than one the same distance below it.
        return min(line - gap.first if gap.first <= line else 1.5 * (gap.first - line) for line in frames)

    return sorted(set(found), key=lambda gap: (gap.first not in first_lines, distance(gap), gap.first))


def candidates(middle: str, cut: str) -> list[str]:
    """What to put in the gap: the first one, two and three lines the model wrote, each new.

    The model does not know how much was cut, and goes on past the gap (it repeats the code
    after it, or writes more); the tests decide which length was meant.
    """
    lines = [line for line in middle.splitlines() if line.strip()]
    indent = cut[: len(cut) - len(cut.lstrip())]
    found: list[str] = []
    for count in range(1, min(MAX_CANDIDATE_LINES, len(lines)) + 1):
        kept = lines[:count]
        # The first line's indent is the gap's: the model sometimes writes it without.
        if not kept[0].startswith((" ", "\t")):
            kept = [indent + kept[0], *kept[1:]]
        text = "\n".join(kept) + "\n"
        if _normalized(text) != _normalized(cut) and text not in found:
            found.append(text)
    return found


def change_size(candidate: str, cut: str) -> float:
    """How much ``candidate`` changes ``cut``: 0 for the same code (spacing aside), up to 1."""
    return 1.0 - difflib.SequenceMatcher(None, _normalized(candidate), _normalized(cut)).ratio()


def parses(source: str, path: str = "x.py") -> bool:
    """Whether ``source`` is valid code of ``path``'s language (Python with ``ast``, else its grammar)."""
    if language_of(path) not in (None, "python"):
        return parses_cleanly(path, source) is not False
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def _normalized(text: str) -> str:
    return " ".join(text.split())


def _function(source: str, span: FunctionSpan) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for node in ast.walk(parsed(source)):
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name == span.name
            and node.lineno == span.start
        ):
            return node
    return None


def _is_docstring(node: ast.stmt, function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return (
        node is function.body[0]
        and isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )
