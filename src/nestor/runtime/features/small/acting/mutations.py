"""Repair templates: the one-token changes most small bugs are, tried on a suspect line before the model.

Most bugs a failing test points at are one token wrong: a comparison off by its ``=`` (``<`` for
``<=``), an index or a length off by one, ``&&`` for ``||``, a negation too many or missing, a flag
the wrong way round. Trying those changes of a suspect line costs a test run each and no model call,
and works the same in every language (template-based program repair, as PraPR and TBar do). The
tests decide which change, if any, is right; the fix step keeps none that does not make them pass.

Only code is changed: string literals and comments are masked before the line is read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

MAX_MUTANTS = 8
"""Changes tried per line at most: the commonest kinds come first."""

_STRING = r"""(?P<string>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`(?:\\.|[^`\\])*`)"""
_MASKED = {
    "python": re.compile(_STRING + r"|(?P<comment>\#.*$)"),
    None: re.compile(_STRING + r"|(?P<comment>//.*$|/\*.*?\*/)"),
}
_COMPARISONS = {
    **{"<=": ("<", ">="), "<": ("<=", ">"), ">=": (">", "<="), ">": (">=", "<")},
    **{"===": ("!==",), "!==": ("===",), "==": ("!=",), "!=": ("==",)},
}
"""Each comparison's likeliest slips first: its ``=`` lost or added, then the other way round."""
_COMPARISON = re.compile(r"(?<![<>=!&|-])(===|!==|==|!=|<=|>=|<|>)(?![<>=])")
_LOGICAL = re.compile(r"&&|\|\||\band\b|\bor\b")
_LOGICAL_SWAP = {"&&": "||", "||": "&&", "and": "or", "or": "and"}
_BOOLEAN = re.compile(r"\b(true|false|True|False)\b")
_BOOLEAN_SWAP = {"true": "false", "false": "true", "True": "False", "False": "True"}
_OFF_BY_ONE = re.compile(r"\s*([+-])\s*1\b(?!\.)")
_RETURNED = re.compile(r"\breturn\s+([A-Za-z_$][\w$.]*(?:\[[^\]]*\])?)\s*(?=;|$|\))")
_INDEX = re.compile(r"\[([A-Za-z_$][\w$.]*)\]")
_NUMBER = re.compile(r"(?<![\w.])(\d+)(?![\w.])")
_NEGATION = re.compile(r"(?<![\w!=])!(?!=)|\bnot\s+")


def mutants(line: str, language: str | None) -> list[str]:
    """Versions of ``line`` one token away, commonest kinds of bug first, at most :data:`MAX_MUTANTS`.

    ``line`` keeps its line end; ``language`` (:func:`.languages.language_of`) says how comments
    are written. The kinds, in order: a comparison with or without its ``=`` (equality turned
    to inequality and back), then turned round (``<`` for ``>``), ``+ 1``/``- 1`` taken off or
    added to what a line returns or indexes, ``&&``/``||`` swapped, a negation dropped,
    ``true``/``false`` swapped, an integer one more or less.
    """
    body, end = (line[:-1], "\n") if line.endswith("\n") else (line, "")
    code = _masked(body, language)
    found: list[str] = []
    for changed in _changes(body, code):
        if changed != body and changed + end not in found:
            found.append(changed + end)
        if len(found) >= MAX_MUTANTS:
            break
    return found


def _changes(body: str, code: str) -> Iterator[str]:
    comparisons = list(_COMPARISON.finditer(code))
    for slip in range(2):
        for match in comparisons:
            others = _COMPARISONS[match.group(1)]
            if slip < len(others):
                yield _replaced(body, match.start(1), match.end(1), others[slip])
    for match in _OFF_BY_ONE.finditer(code):
        yield _replaced(body, match.start(), match.end(), "")
        yield _replaced(body, match.start(1), match.start(1) + 1, "-" if match.group(1) == "+" else "+")
    for pattern in (_RETURNED, _INDEX):
        for match in pattern.finditer(code):
            if not _OFF_BY_ONE.match(code, match.end(1)):
                yield _replaced(body, match.end(1), match.end(1), " + 1")
                yield _replaced(body, match.end(1), match.end(1), " - 1")
    for match in _LOGICAL.finditer(code):
        yield _replaced(body, match.start(), match.end(), _LOGICAL_SWAP[match.group()])
    for match in _NEGATION.finditer(code):
        yield _replaced(body, match.start(), match.end(), "")
    for match in _BOOLEAN.finditer(code):
        yield _replaced(body, match.start(), match.end(), _BOOLEAN_SWAP[match.group()])
    for match in _NUMBER.finditer(code):
        value = int(match.group(1))
        yield _replaced(body, match.start(1), match.end(1), str(value + 1))
        if value > 0:
            yield _replaced(body, match.start(1), match.end(1), str(value - 1))


def _replaced(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def _masked(line: str, language: str | None) -> str:
    """``line`` with its strings' contents and its comments blanked out (same length)."""

    def blank(match: re.Match[str]) -> str:
        text = match.group()
        if match.group("string"):
            return text[0] + " " * (len(text) - 2) + text[-1]
        return " " * len(text)

    return _MASKED["python" if language == "python" else None].sub(blank, line)
