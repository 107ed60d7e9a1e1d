"""Ranking what the searches found: the definition the user's qualified name points at comes first."""

from pathlib import Path

import pytest

from nestor.runtime.small.intent import read_intent
from nestor.runtime.small.reader import ProjectReader
from nestor.runtime.small.retrieval import Hit, rank_hits

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
        ("Where is semver.parse() defined now?", ("semver/wrappers.py", 5)),
        ("Where is Version.parse() defined?", ("semver/version.py", 4)),
    ],
)
def test_a_qualified_name_ranks_the_definition_it_qualifies_first(
    tmp_path: Path, question: str, expected: tuple[str, int]
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
    assert (ranked[0].path, ranked[0].line) == expected
