"""How code names what a request says in words or symbols: bounds, protocols and operators.

A user asks "how many comparators at most?"; the code says ``MAX_COMPARATORS``. A user asks
"where is a version string parsed into a Version?"; Rust parses through ``impl FromStr for
Version``, Python compares through ``__lt__``, JavaScript prints through ``toString``. The words
of the question are never on those lines, so the names are searched too (and score the lines
that have them): a bound joined to each subject of the question, and the names each language
gives the behaviour the question names. Every language's names are given: a search for a name
the project's language does not use finds nothing and costs one search at most. A bug report
writes an operator ("`<2.0.0` matches 3.0.0"); the code that decides it is ``matches_less``,
``Op::Less``, ``__lt__`` or ``lessThan``: :func:`operator_patterns` finds those names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

BOUND_WEIGHT = 1.2
"""A bound joined to a word of the question: more than a word, less than a phrase the user wrote."""
PROTOCOL_WEIGHT = 0.9
"""A protocol's name: less than any word the user wrote (it is searched only when there is room)."""
OPERATOR_WEIGHT = 0.9
"""An operator's name in code: as a protocol's."""

_MAX_WORDS = r"at most|max(?:imum|imal)?|upper (?:bound|limit)|longest|largest|biggest"
_MIN_WORDS = r"at least|min(?:imum|imal)?|lower (?:bound|limit)|shortest|smallest|fewest"
_BOUNDS = (
    ("max", re.compile(rf"(?i)\b(?:{_MAX_WORDS})\b")),
    ("min", re.compile(rf"(?i)\b(?:{_MIN_WORDS})\b")),
    ("limit", re.compile(r"(?i)\blimit(?:s|ed)?\b")),
)
_PROTOCOLS = (
    (r"pars(?:e|es|ed|ing)", ("FromStr", "from_str")),
    (
        r"(?:string|text) (?:form|representation)|to (?:a )?string|display(?:s|ed)?|printed",
        ("Display", "__str__", "__repr__", "toString"),
    ),
    (
        r"compar(?:e|es|ed|ing|ison)|order(?:s|ed|ing)?|sort(?:s|ed|ing)?",
        ("PartialOrd", "__lt__", "compareTo"),
    ),
    (r"equal(?:s|ity)?", ("PartialEq", "__eq__", "equals")),
    (r"hash(?:es|ed|ing)?", ("Hash", "__hash__", "hashCode")),
    (r"iterat(?:e|es|ed|ing|ion|or)", ("Iterator", "__iter__")),
    (r"convert(?:s|ed|ing)?|conversion", ("From", "TryFrom")),
)
_PROTOCOL_PATTERNS = tuple((re.compile(rf"(?i)\b(?:{words})\b"), names) for words, names in _PROTOCOLS)


def bound_names(prose: str, subjects: Sequence[str]) -> list[str]:
    """For a question about a bound, the bound joined to each subject (``max_comparator``).

    ``subjects`` are the question's content words, stemmed; those that are the bound word
    itself ("shortest") are left out.
    """
    return [
        f"{bound}_{subject}"
        for bound, asked in _BOUNDS
        if asked.search(prose)
        for subject in subjects
        if not asked.fullmatch(subject)
    ]


def protocol_names(prose: str) -> list[str]:
    """The names languages give the behaviours ``prose`` names (``FromStr`` for parsing), in order."""
    return list(
        dict.fromkeys(name for asked, names in _PROTOCOL_PATTERNS if asked.search(prose) for name in names)
    )


_OPERATOR_NAMES: dict[str, tuple[tuple[str, ...], ...]] = {
    "<=": (("less", "eq"), ("le",), ("lte",)),
    ">=": (("greater", "eq"), ("ge",), ("gte",)),
    "==": (("eq",), ("equal",), ("equals",)),
    "!=": (("ne",), ("not", "equal"), ("not", "eq")),
    "<": (("less",), ("lt",)),
    ">": (("greater",), ("gt",)),
}
# An operator before a number (`<2.0.0`, `>= 5`), or one between spaces (`a < b`); not an arrow
# (`->`, `=>`), a shift (`<<`) or a tag (`<div>`).
_OPERATOR = re.compile(r"(?<![<>=!-])(<=|>=|==|!=|<|>)(?=\s*\d)|(?<=\s)(<=|>=|==|!=|<|>)(?=\s)")


def operator_names(prose: str) -> list[tuple[str, ...]]:
    """The names code gives the comparison operators ``prose`` writes, as identifier words.

    ``<`` is ``less`` or ``lt``: the words of ``matches_less``, ``Op::Less``, ``__lt__`` and
    ``lessThan`` have one of them, those of ``unless`` and ``result`` have neither.
    """
    written = dict.fromkeys(before or between for before, between in _OPERATOR.findall(prose))
    return [name for operator in written for name in _OPERATOR_NAMES[operator]]
