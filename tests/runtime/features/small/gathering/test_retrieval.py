"""Ranking what the searches found: the definition the user's qualified name points at comes first."""

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from nestor.runtime.features.small.gathering.evidence import Evidence, Excerpt, Hit, Region
from nestor.runtime.features.small.gathering.ranking import rank_hits
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.retrieval import RunTools, gather_evidence, searched_terms
from nestor.runtime.features.small.gathering.symbols import symbol_index
from nestor.runtime.features.small.understanding.intent import question_parts, read_intent, search_terms
from nestor.runtime.kernel.driver import ToolCall, ToolOutcome

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


def _search_tools(root: Path) -> RunTools:
    """grep, glob and view over ``root``, as the real tools report them (hits as path and line)."""

    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))

    async def run(calls: Sequence[ToolCall]) -> list[ToolOutcome]:
        outcomes: list[ToolOutcome] = []
        for name, args in calls:
            if name == "grep":
                pattern = re.compile(args["pattern"])
                hits = [
                    [path, number]
                    for path in files
                    for number, line in enumerate((root / path).read_text().splitlines(), 1)
                    if pattern.search(line)
                ]
                outcomes.append(ToolOutcome("", {"hits": hits[:100]}, True))
            elif name == "view":
                lines = (root / args["path"]).read_text().splitlines()
                first, count = args["offset"], args["limit"]
                shown = [f"{n + 1:6}\t{lines[n]}" for n in range(first, min(len(lines), first + count))]
                outcomes.append(ToolOutcome("\n".join(shown), {}, True))
            else:
                outcomes.append(ToolOutcome("", {}, True))
        return outcomes

    return run


async def _evidence(root: Path, question: str, **options: Any) -> Evidence:
    reader = ProjectReader(root)
    symbols = symbol_index(reader)
    parts = [{t.text for t in search_terms(p, symbols.names())} for p in question_parts(question)]
    intent = read_intent(question, (), symbols.names())
    return await gather_evidence(
        intent, reader, _search_tools(root), symbols=symbols, parts=parts if len(parts) > 1 else (), **options
    )


CACHE = (
    """class Cache:
    def __init__(self, maxsize, getsizeof=None):
        if getsizeof:
            self.getsizeof = getsizeof
        self.maxsize = maxsize
{filler}
    def __setitem__(self, key, value):
        size = self.getsizeof(value)
        if size > self.maxsize:
            raise ValueError("value too large")
        self.data[key] = value

    @staticmethod
    def getsizeof(value):
        return 1
""".replace("{filler}", "".join(f"\n    def method{n}(self):\n        return {n}\n" for n in range(12)))
    + "".join(
        f"\n\nclass Cache{n}(Cache):\n    def __init__(self, maxsize, getsizeof=None):\n"
        "        Cache.__init__(self, maxsize, getsizeof)\n"
        for n in range(4)
    )
)


async def test_a_question_about_an_exception_is_shown_the_function_that_raises_it(tmp_path: Path) -> None:
    # Found when "getsizeof" and "maxsize" became names: their definitions outranked the answer.
    (tmp_path / "cache.py").write_text(CACHE)
    question = (
        "I use a Cache with a getsizeof function. What exception do I get if a value's size is over maxsize?"
    )
    evidence = await _evidence(tmp_path, question)
    assert 'raise ValueError("value too large")' in "\n".join(e.render() for e in evidence.excerpts)


SIGNER = """import typing as t

from .encoding import want_bytes


class Signer:
    default_key_derivation: str = "django-concat"

    @t.overload
    def unsign(self, value: str, max_age: int | None = None) -> str: ...

    def __init__(
        self,
        key_derivation: str | None = None,
    ):
        if key_derivation is None:
            key_derivation = self.default_key_derivation
        self.key_derivation = key_derivation

    def unsign(self, value, max_age=None):
        return value
"""


async def test_the_definition_of_a_name_the_best_line_uses_is_shown(tmp_path: Path) -> None:
    # Found blind on itsdangerous: the default is a class attribute the answer line only names.
    filler = "\n".join(f"# filler {n}" for n in range(30))
    (tmp_path / "signer.py").write_text(SIGNER.replace("class Signer:", filler + "\n\nclass Signer:"))
    question = "If I construct a `Signer` without key_derivation, which key derivation does it use?"
    evidence = await _evidence(tmp_path, question, max_lines=10)
    rendered = evidence.render()
    assert "key_derivation = self.default_key_derivation" in rendered
    assert (
        'Where names used above are defined:\nsigner.py:38: default_key_derivation: str = "django-concat"'
        in rendered
    )


def test_a_parameter_line_is_not_a_definition_and_overload_stubs_rank_low(tmp_path: Path) -> None:
    # Found blind on itsdangerous: `max_age: int | None = None,` lines of three @overload stubs
    # took the evidence the real unsign needed.
    (tmp_path / "signer.py").write_text(SIGNER)
    reader = ProjectReader(tmp_path)
    assigned = rank_hits(
        [Hit("signer.py", line, "") for line in (14, 18)],
        read_intent("Where is `key_derivation` set?"),
        reader,
    )
    assert [hit.line for hit in assigned] == [18, 14]
    (tmp_path / "signatures.py").write_text("SIGNATURES = dict(\n    key_derivation=[1],\n)\n")
    keyword = rank_hits(
        [Hit("signatures.py", 2, ""), Hit("signer.py", 18, "")],
        read_intent("Where is `key_derivation` set?"),
        reader,
    )
    assert [hit.path for hit in keyword] == ["signer.py", "signatures.py"]
    defined = rank_hits(
        [Hit("signer.py", line, "") for line in (10, 20)], read_intent("Where is `unsign` defined?"), reader
    )
    assert [hit.line for hit in defined] == [20, 10]


async def test_a_word_common_in_the_project_does_not_pull_in_its_definitions(tmp_path: Path) -> None:
    # Found when "build" (a verb here, a property of the library) became a name.
    bumps = "".join(f"    def bump{n}(self):\n        return self.build\n\n" for n in range(45))
    version = '"""Versions for pysemver."""\n\n\nclass Version:\n' + bumps
    (tmp_path / "version.py").write_text(
        version + "    @property\n    def build(self):\n        return self._build\n"
    )
    (tmp_path / "cli.py").write_text(
        "import argparse\n\n\ndef createparser():\n"
        "    parser = argparse.ArgumentParser()\n    return parser\n"
    )
    question = "Where does the pysemver command build its argparse parser?"
    evidence = await _evidence(tmp_path, question, max_lines=8)
    assert [region.path for region in evidence.regions] == ["cli.py"]


async def test_each_part_of_a_question_gets_its_best_hit_shown(tmp_path: Path) -> None:
    # Found blind on itsdangerous: of three questions in one, the third got no evidence.
    (tmp_path / "exc.py").write_text(
        "".join(f'class BadSignature{n}(Exception):\n    """A bad signature, {n}."""\n\n\n' for n in range(6))
        + 'class SignatureExpired(BadTimeSignature):\n    """The signature expired."""\n'
    )
    (tmp_path / "signer.py").write_text(
        "import hmac\n\n\ndef verify(sig, expected):\n    return hmac.compare_digest(sig, expected)\n"
    )
    question = "1) What is the parent class of SignatureExpired?\n2) How are signatures compared?"
    evidence = await _evidence(tmp_path, question, max_lines=6)
    shown = evidence.render()
    assert "class SignatureExpired(BadTimeSignature):" in shown and "hmac.compare_digest" in shown


def test_the_class_a_name_is_qualified_with_is_context_not_the_answer(tmp_path: Path) -> None:
    (tmp_path / "semver").mkdir()
    (tmp_path / "semver" / "version.py").write_text(VERSION)
    (tmp_path / "semver" / "wrappers.py").write_text(WRAPPERS)
    hits = [Hit("semver/version.py", 1, ""), Hit("semver/wrappers.py", 6, "")]
    ranked = rank_hits(hits, read_intent("What does Version.parse() give?"), ProjectReader(tmp_path))
    assert [(hit.path, hit.line) for hit in ranked] == [("semver/wrappers.py", 6), ("semver/version.py", 1)]


async def test_a_long_docstring_is_cut_so_that_the_code_of_its_function_fits(tmp_path: Path) -> None:
    # Found on semver: next_version's docstring pushed its last, deciding lines out of view.
    doc = "\n".join(f"        Line {n} of the docs." for n in range(30))
    body = "\n".join(f"    step{n} = {n}" for n in range(12))
    (tmp_path / "version.py").write_text(
        f'def next_version(part):\n    """\n        Decides.\n{doc}\n'
        "        :param part: the part, a prerelease by default\n"
        f'    """\n{body}\n    return bump_prerelease(part)\n'
    )
    evidence = await _evidence(tmp_path, "Explain what next_version does for a prerelease")
    shown = evidence.render()
    assert "return bump_prerelease(part)" in shown and "Line 7 of the docs" not in shown
    assert "    ...\n" in shown and ":param part: the part, a prerelease by default" in shown


def test_a_variable_of_a_function_is_not_a_definition(tmp_path: Path) -> None:
    # Found on cachetools: `key=` in backticks made every `key = next(...)` in a method a definition.
    (tmp_path / "cache.py").write_text(
        "class Cache:\n    def popitem(self):\n        key = next(iter(self.order))\n        return key\n\n\n"
        "def cached(cache, key=hashkey):\n    return cache\n"
    )
    hits = [Hit("cache.py", 3, ""), Hit("cache.py", 7, "")]
    ranked = rank_hits(
        hits, read_intent("Which function builds the `key=` when I use @cached?"), ProjectReader(tmp_path)
    )
    assert [hit.line for hit in ranked] == [7, 3]


COOKIE_JS = """'use strict';

exports.parse = parse;

{filler}

function parse(str) {
  var obj = {};
  var pairs = str.split(';');
  for (var i = 0; i < pairs.length; i++) {
    var pair = pairs[i].split('=');
    obj[pair[0]] = tryDecode(pair[1]);
  }
  return obj;
}

function tryDecode(str) {
  try {
    return decodeURIComponent(str);
  } catch (e) {
    return str;
  }
}
"""


async def test_a_line_known_to_matter_is_shown_with_its_whole_function_in_any_language(
    tmp_path: Path,
) -> None:
    # Found on cookie (JavaScript): the definition of the function the question's example calls
    # was found by the search for "parse" too, so it kept a search hit's score and the file's
    # header comments were shown instead; and a JavaScript hit got a window of lines, not its function.
    filler = "\n".join(f"// parse note {n}" for n in range(12))
    source = COOKIE_JS.replace("{filler}", filler)
    (tmp_path / "index.js").write_text(source)
    start = source.splitlines().index("function parse(str) {") + 1
    evidence = await _evidence(
        tmp_path, "What does parse do with a broken cookie value?", extra_hits=[("index.js", start)]
    )
    assert evidence.regions[0].path == "index.js"
    assert (evidence.regions[0].start, evidence.regions[0].end) == (start, start + 8)
    assert evidence.regions[0].label == "function parse"


EXCEPTIONS = '''class BadData(Exception):
    """Raised for any data that is not valid."""


class BadSignature(BadData):
    """Raised if a signature does not match."""


class BadPayload(BadData):
    """Raised if a payload is invalid. This could happen if the payload
    is loaded despite an invalid signature, or if there is a mismatch
    between the serializer and deserializer."""
'''

SIGNATURES = """def verify_signature(value, sig):
    # The overlapping signatures check comes first.
    return sig == signature_of(value)


def signature_of(value):
    return value[::-1]
""" + "".join(
    f"\n\ndef signed_payload_{n}(payload):\n    signature = signature_of(payload)\n"
    "    return payload, signature\n"
    for n in range(25)
)  # "signature" and "payload" on many lines: they say little alone


async def test_each_part_of_a_question_told_in_prose_is_shown_where_its_words_come_together(
    tmp_path: Path,
) -> None:
    # Found on itsdangerous: part 1 searched only "signature checks" and "token" (on no line),
    # never "payload" or "deserialized"; and its words are spread over BadPayload's docstring,
    # while one line of a comment held two of them.
    (tmp_path / "exc.py").write_text(EXCEPTIONS)
    (tmp_path / "signer.py").write_text(SIGNATURES)
    question = (
        "1) if a token's signature checks out but the payload can't be deserialized, which exception"
        " do I get?\n2) what's the direct parent class of BadSignature?"
    )
    evidence = await _evidence(tmp_path, question, max_lines=12)
    assert {"(?i)payload", "(?i)deserializ"} <= set(evidence.searched)
    shown = "\n".join(excerpt.render() for excerpt in evidence.excerpts)
    assert "class BadPayload(BadData):" in shown and "serializer and deserializer" in shown
