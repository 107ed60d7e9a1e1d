"""Ranking search hits for a prompt.

A definition of an asked-about name beats a mention; a line matching several terms beats one
matching one.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import PurePosixPath

from nestor.runtime.features.small.gathering.evidence import Hit
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.regions import DOC_SUFFIXES, TEST_PATH, enclosing_block
from nestor.runtime.features.small.understanding.intent import Intent, SearchTerm

QUALIFIER_DEFINITION = 1.0
"""The definition bonus of a qualifier (``Version`` of ``Version.parse()``), against 4 for a name."""
RAISE_BONUS = 4.0
"""How far a ``raise`` line ranks above its function's best hit, for a question about an exception."""
_RAISE = re.compile(r"^\s*raise\b")
_ASKS_FOR_EXCEPTION = re.compile(
    r"\b(?:what|which)\s+(?:\w+\s+){0,2}(?:exceptions?|errors?)\b|\bwhat\s+(?:does|do|will)\b.{0,60}\braises?\b",
    re.IGNORECASE,
)

_DEFINITION = (
    r"^\s*(?:export\s+)?(?:pub\s+)?(?:async\s+)?"
    r"(?:def|class|function|func|fn|interface|type|struct|enum|const|let|var|static)\s+{name}\b"
)
_ASSIGNMENT = r"^\s*(?:self\.)?{name}\s*(?::[^=\n]*)?=(?!=)"


def term_pattern(term: SearchTerm) -> str:
    """The ripgrep regex that finds ``term``."""
    if term.exact:
        escaped = re.escape(term.text)
        return rf"\b{escaped}\b" if re.fullmatch(r"\w+", term.text) else escaped
    # A joined phrase (digest_method) also matches DigestMethod, digest-method and "digest method".
    parts = [re.escape(part) for part in term.text.split("_") if part]
    return "(?i)" + "[_ -]?".join(parts)


def rank_hits(hits: list[Hit], intent: Intent, reader: ProjectReader) -> list[Hit]:
    """Score each hit by the terms its line matches, definitions and the file's relevance; best first."""
    patterns = [(term, re.compile(term_pattern(term))) for term in intent.terms if not term.is_file]
    terms_per_file: dict[str, set[str]] = {}
    for hit in hits:
        text = reader.read_text(hit.path)
        lines = text.splitlines() if text else []
        hit.text = lines[hit.line - 1] if 0 < hit.line <= len(lines) else ""
    # Qualified names with a definition that fits the qualifier: other definitions of the same
    # name (Version.parse when semver.parse() was asked about) are of something else.
    fitted = {
        term.text
        for term, _ in patterns
        if term.owner is not None
        and any(_defines(hit.text, term) and _owned_as_written(hit.text, term.owner) for hit in hits)
    }
    for hit in hits:
        names = 0
        for term, pattern in patterns:
            if pattern.search(hit.text):
                hit.terms.add(term.text)
                hit.score += term.weight
                names += term.exact and not term.prose
                if _defines(hit.text, term) and not _assigns_a_local(reader, hit):
                    hit.score += _definition_bonus(hit.text, term, fitted) * term.weight
        if names > 1:  # a line naming several of the user's identifiers ties them together
            hit.score *= 1.0 + 0.25 * (names - 1)
        terms_per_file.setdefault(hit.path, set()).update(hit.terms)
    if asks_for_exception(" ".join(intent.words)):
        hits = hits + _raise_hits(hits, reader)
    wants_tests = bool(intent.failing_tests) or any("test" in t.text.lower() for t in intent.terms)
    for hit in hits:
        hit.score += 0.5 * len(terms_per_file.get(hit.path, ()))
        if hit.path.endswith(".py") and _in_overload_stub(reader.read_text(hit.path) or "", hit.line):
            hit.score *= 0.3  # a typing stub says what the real definition below says, without the code
        if TEST_PATH.search(hit.path) and not wants_tests:
            hit.score *= 0.5
        if PurePosixPath(hit.path).suffix in DOC_SUFFIXES and intent.kind != "tour":
            hit.score *= 0.6
    return sorted(hits, key=lambda hit: (-hit.score, hit.path, hit.line))


def asks_for_exception(text: str) -> bool:
    """Whether ``text`` asks which exception or error something raises."""
    return _ASKS_FOR_EXCEPTION.search(text) is not None


def _in_overload_stub(text: str, line: int) -> bool:
    return any(start <= line <= end for start, end in _overload_stubs(text))


@functools.lru_cache(maxsize=64)
def _overload_stubs(text: str) -> tuple[tuple[int, int], ...]:
    """The lines of the ``@overload`` stubs of ``text``."""
    if "overload" not in text:
        return ()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    return tuple(
        (min([node.lineno, *(d.lineno for d in node.decorator_list)]), node.end_lineno or node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(ast.unparse(d).rsplit(".", 1)[-1] == "overload" for d in node.decorator_list)
    )


def _raise_hits(hits: list[Hit], reader: ProjectReader) -> list[Hit]:
    """For a question about an exception: the ``raise`` lines of the functions the hits are in.

    "What exception do I get if the value is bigger than maxsize?" is answered by the ``raise``
    under ``if size > maxsize:``, a line that has none of the question's words; its function has
    them. Each such line ranks above the best hit of its function.
    """
    best: dict[tuple[str, int, int], Hit] = {}
    for hit in hits:
        if not hit.terms or not hit.path.endswith(".py") or TEST_PATH.search(hit.path):
            continue
        block = enclosing_block(reader.read_text(hit.path) or "", hit.line)
        if block is None or not block[0].startswith("def "):
            continue
        key = (hit.path, block[1], block[2])
        if key not in best or hit.score > best[key].score:
            best[key] = hit
    seen = {(hit.path, hit.line) for hit in hits}
    found: list[Hit] = []
    for (path, start, end), top in best.items():
        lines = (reader.read_text(path) or "").splitlines()
        for number in range(start, min(end, len(lines)) + 1):
            if _RAISE.match(lines[number - 1]) and (path, number) not in seen:
                found.append(Hit(path, number, lines[number - 1], top.score + RAISE_BONUS))
                break
    return found


def _definition_bonus(line: str, term: SearchTerm, fitted: set[str]) -> float:
    """What defining ``term`` on ``line`` adds to the line's score, per unit of the term's weight.

    The definition of a name the user wrote is what most questions are about, the more so when
    it fits the name's qualifier. One that does not fit, when another does, defines something
    else: it ranks below the lines that merely use the name.
    """
    if term.common:
        return 0.0
    if term.qualifier:
        return QUALIFIER_DEFINITION
    if term.owner is None:
        return 4.0 if term.exact else 2.0
    if _owned_as_written(line, term.owner):
        return 6.0
    return -0.5 if term.text in fitted else 4.0


def _owned_as_written(line: str, owner: str) -> bool:
    """Whether a definition's line fits the name's qualifier: a method for a class, else top level.

    ``semver.parse()`` means the module's function, not the ``Version.parse`` method, and
    ``Version.parse()`` the other way round (by Python's naming: classes are capitalised);
    ``self.x`` and ``cls.x`` are methods too.
    """
    nested = line[: len(line) - len(line.lstrip())] != ""
    return nested == (owner[:1].isupper() or owner in ("self", "cls"))


def _defines(line: str, term: SearchTerm) -> bool:
    name = (
        re.escape(term.text) if term.exact else "[_ -]?".join(map(re.escape, term.text.split("_"))) + r"\w*"
    )
    flags = 0 if term.exact else re.IGNORECASE
    if re.search(_DEFINITION.format(name=name), line, flags):
        return True
    # ``max_age: int | None = None,`` is a parameter of a signature over several lines, not a definition.
    return bool(re.search(_ASSIGNMENT.format(name=name), line, flags)) and not line.rstrip().endswith(",")


def _assigns_a_local(reader: ProjectReader, hit: Hit) -> bool:
    """Whether the hit's line assigns a variable of a function (``key = next(it)``).

    That is not a definition anybody asks about, unlike a module's or a class's (or ``self.x = ...``).
    """
    stripped = hit.text.lstrip()
    if stripped == hit.text or stripped.startswith(("def ", "async def ", "class ", "self.", "cls.")):
        return False
    if not hit.path.endswith(".py"):
        return False
    block = enclosing_block(reader.read_text(hit.path) or "", hit.line)
    return block is not None and block[0].startswith("def ")
