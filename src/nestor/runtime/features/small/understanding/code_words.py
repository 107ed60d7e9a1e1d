"""How code names what a question says in words: bounds and the protocols of languages.

A user asks "how many comparators at most?"; the code says ``MAX_COMPARATORS``. A user asks
"where is a version string parsed into a Version?"; Rust parses through ``impl FromStr for
Version``, Python compares through ``__lt__``, JavaScript prints through ``toString``. The words
of the question are never on those lines, so the names are searched too (and score the lines
that have them): a bound joined to each subject of the question, and the names each language
gives the behaviour the question names. Every language's names are given: a search for a name
the project's language does not use finds nothing and costs one search at most.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

BOUND_WEIGHT = 1.2
"""A bound joined to a word of the question: more than a word, less than a phrase the user wrote."""
PROTOCOL_WEIGHT = 0.9
"""A protocol's name: less than any word the user wrote (it is searched only when there is room)."""

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
