"""Ranking what the searches found: the definition the user's qualified name points at comes first."""

from pathlib import Path

import pytest

from nestor.runtime.small.intent import read_intent, search_terms
from nestor.runtime.small.reader import ProjectReader
from nestor.runtime.small.retrieval import Excerpt, Hit, Region, rank_hits, searched_terms

VERSION = '''class Version:
    """A version."""

    def parse(cls, text):
        return cls(text)
'''

WRAPPERS = """from .version import Version


@deprecated
def parse(text):
    return Version.parse(text)
"""


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # The method of the same name defines something else: a line using the name says more.
        ("Where is semver.parse() defined now?", [("semver/wrappers.py", 5), ("semver/wrappers.py", 6)]),
        ("Where is Version.parse() defined?", [("semver/version.py", 4)]),
        ("Where is self.parse() defined?", [("semver/version.py", 4)]),  # self. means a method
    ],
)
def test_a_qualified_name_ranks_the_definition_it_qualifies_first(
    tmp_path: Path, question: str, expected: list[tuple[str, int]]
) -> None:
    (tmp_path / "semver").mkdir()
    (tmp_path / "semver" / "version.py").write_text(VERSION)
    (tmp_path / "semver" / "wrappers.py").write_text(WRAPPERS)
    hits = [
        Hit("semver/version.py", 4, ""),
        Hit("semver/wrappers.py", 5, ""),
        Hit("semver/wrappers.py", 6, ""),
    ]
    ranked = rank_hits(hits, read_intent(question, ()), ProjectReader(tmp_path))
    assert [(hit.path, hit.line) for hit in ranked[: len(expected)]] == expected


def test_the_searches_skip_three_word_phrases_for_words_no_phrase_covers() -> None:
    terms = search_terms("Which kind of lock do the functools-style decorators pass to cached()?")
    searched = [term.text for term in searched_terms(terms)]
    assert searched[0] == "cached"
    assert "lock" in searched and "functools_style" in searched
    assert "functools_style_decorators" not in searched
    # Still scored: a line matching the whole phrase ranks by it.
    assert "functools_style_decorators" in [term.text for term in terms]


def test_an_excerpt_numbers_its_first_line_and_the_lines_that_matched_only() -> None:
    excerpt = Excerpt.from_view(
        Region("pkg/mod.py", 10, 13, 1.0, "def f"),
        "    10\tdef f(x):\n    11\t    y = x + 1\n    12\t    return LIMIT * y\n    13\t\n",
        marked=[12, 40],
    )
    assert excerpt.render() == (
        "pkg/mod.py lines 10-13 (def f):\n10: def f(x):\n    y = x + 1\n12:     return LIMIT * y\n"
    )
    plain = ["def f(x):", "    y = x + 1", "    return LIMIT * y", ""]
    assert excerpt.render(numbered=False).split("\n")[1:] == plain
