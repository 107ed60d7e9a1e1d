"""Evidence for a small model: search the project for a prompt's terms, rank the hits, read the best.

The searches and reads are real tool calls (``grep``, ``glob``, ``view``) made through the agent,
so permission rules, events and the stored session see them like any other call. What is done here
is the part a 1.5B model does badly: choosing the searches, ranking what they found (a definition
of an asked-about name beats a mention; a line matching several terms beats one matching one), and
cutting each hit to the code around it (the enclosing function, for Python) within a line budget.
"""

from __future__ import annotations

import ast
import functools
import math
import re
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from nestor.runtime.features.small.intent import Intent, SearchTerm
from nestor.runtime.features.small.project import project_files
from nestor.runtime.features.small.reader import ProjectReader
from nestor.runtime.features.small.symbols import SymbolIndex
from nestor.runtime.kernel.driver import ToolCall, ToolOutcome

RunTools = Callable[[Sequence[ToolCall]], Awaitable[list[ToolOutcome]]]
"""Runs tool calls (in parallel, through the agent's permission gate) and returns their outcomes."""

MAX_SEARCHES = 8
MAX_REGIONS = 4
MAX_EVIDENCE_LINES = 70
MAX_FUNCTION_LINES = 40
MAX_OTHER_HITS = 6
MIN_SPECIFICITY = 0.4
MIN_PART_MATCH = 1.0
MIN_REGION_SHARE = 0.3
"""A region is shown only if its hit scores at least this share of the best hit's score."""
QUALIFIER_DEFINITION = 1.0
"""The definition bonus of a qualifier (``Version`` of ``Version.parse()``), against 4 for a name."""
ELISION = "    ..."
MAX_DEFINITIONS = 4
MAX_USED_LINES = 6
"""The best lines in view whose names' definitions are shown (see ``_definitions_used``)."""
_NAME = re.compile(r"(?<![\w.])(?:self\.|cls\.)?([A-Za-z_]\w*)")
COMMON_WORD_LINES = 40
"""A word the user wrote in prose found on more lines than this is common in the project."""
RAISE_BONUS = 4.0
"""How far a ``raise`` line ranks above its function's best hit, for a question about an exception."""
_RAISE = re.compile(r"^\s*raise\b")
_ASKS_FOR_EXCEPTION = re.compile(
    r"\b(?:what|which)\s+(?:\w+\s+){0,2}(?:exceptions?|errors?)\b|\bwhat\s+(?:does|do|will)\b.{0,60}\braises?\b"
)

_DEFINITION = (
    r"^\s*(?:export\s+)?(?:pub\s+)?(?:async\s+)?"
    r"(?:def|class|function|func|fn|interface|type|struct|enum|const|let|var|static)\s+{name}\b"
)
_ASSIGNMENT = r"^\s*(?:self\.)?{name}\s*(?::[^=\n]*)?=(?!=)"
_TEST_PATH = re.compile(r"(?:^|/)(?:tests?|spec)(?:/|$)|(?:^|/)test_[^/]*$|_test\.\w+$|\.spec\.\w+$")
_DOC_SUFFIXES = frozenset({".md", ".rst", ".txt"})


@dataclass(frozen=True, slots=True)
class Region:
    """Lines ``start``..``end`` (1-based, inclusive) of ``path``, chosen as evidence."""

    path: str
    start: int
    end: int
    score: float
    label: str = ""
    elided: tuple[int, int] | None = None
    """Lines of a long docstring in the region that are left out unless a search matched them."""

    @property
    def size(self) -> int:
        """The lines it shows (an elided stretch counts as one line)."""
        hidden = self.elided[1] - self.elided[0] if self.elided else 0
        return self.end - self.start + 1 - hidden


@dataclass(slots=True)
class Hit:
    """One matching line and how much it is worth."""

    path: str
    line: int
    text: str
    score: float = 0.0
    terms: set[str] = field(default_factory=set[str])


@dataclass(slots=True)
class Evidence:
    """What the harness found: the regions read, with their lines, and other matching lines."""

    regions: list[Region] = field(default_factory=list[Region])
    excerpts: list[Excerpt] = field(default_factory=list["Excerpt"])
    other_hits: list[Hit] = field(default_factory=list[Hit])
    definitions: list[Hit] = field(default_factory=list[Hit])
    searched: list[str] = field(default_factory=list[str])

    @property
    def empty(self) -> bool:
        """True when nothing was found."""
        return not self.excerpts and not self.other_hits

    def render(self, *, numbered: bool = True, paths: Callable[[str], bool] | None = None) -> str:
        """The evidence as text for the model: excerpts first, then the other matching lines.

        Args:
            numbered: Put each line's number before it (answers cite them); edits copy lines
                exactly, and numbers in the way make small models copy them too.
            paths: Only the excerpts of files it accepts, and no other matching lines.

        """
        blocks = [
            excerpt.render(numbered=numbered)
            for excerpt in self.excerpts
            if paths is None or paths(excerpt.region.path)
        ]
        if self.definitions and paths is None:
            rows = [f"{hit.path}:{hit.line}: {hit.text.strip()[:160]}" for hit in self.definitions]
            blocks.append("Where names used above are defined:\n" + "\n".join(rows))
        if self.other_hits and paths is None:
            rows = [f"{hit.path}:{hit.line}: {hit.text.strip()[:160]}" for hit in self.other_hits]
            blocks.append("Other matching lines:\n" + "\n".join(rows))
        return "\n\n".join(blocks)


@dataclass(frozen=True, slots=True)
class Excerpt:
    """The lines of one region as ``view`` returned them: ``(number, text)`` pairs.

    Attributes:
        marked: The numbers of the lines that matched a search: numbered when rendered.

    """

    region: Region
    lines: tuple[tuple[int, str], ...]
    marked: frozenset[int] = frozenset()

    @classmethod
    def from_view(cls, region: Region, view_output: str, marked: Iterable[int] = ()) -> Excerpt:
        """Read the numbered lines out of ``view``'s output."""
        rows: list[tuple[int, str]] = []
        for line in view_output.splitlines():
            number, tab, code = line.partition("\t")
            if tab and number.strip().isdigit():
                rows.append((int(number), code))
        return cls(region, tuple(rows), frozenset(marked))

    def render(self, *, numbered: bool = True) -> str:
        """A heading naming the file and lines, then the lines.

        Args:
            numbered: Put its number before the first line and each marked line, for answers to
                cite. Only those: a small model's tokenizer spells a number digit by digit, so
                numbering every line would make a third of the prompt.

        """
        label = f" ({self.region.label})" if self.region.label else ""
        heading = f"{self.region.path} lines {self.region.start}-{self.region.end}{label}:"
        first = self.lines[0][0] if self.lines else 0
        elided = self.region.elided
        body: list[str] = []
        for number, code in self.lines:
            if elided and elided[0] <= number <= elided[1] and number not in self.marked:
                if not body or body[-1] != ELISION:
                    body.append(ELISION)
                continue
            body.append(
                f"{number}: {code}" if numbered and (number == first or number in self.marked) else code
            )
        return heading + "\n" + "\n".join(body)


def term_pattern(term: SearchTerm) -> str:
    """The ripgrep regex that finds ``term``."""
    if term.exact:
        escaped = re.escape(term.text)
        return rf"\b{escaped}\b" if re.fullmatch(r"\w+", term.text) else escaped
    # A joined phrase (digest_method) also matches DigestMethod, digest-method and "digest method".
    parts = [re.escape(part) for part in term.text.split("_") if part]
    return "(?i)" + "[_ -]?".join(parts)


async def gather_evidence(
    intent: Intent,
    reader: ProjectReader,
    run_tools: RunTools,
    *,
    max_lines: int = MAX_EVIDENCE_LINES,
    extra_hits: Sequence[tuple[str, int]] = (),
    companion_tests: bool = False,
    symbols: SymbolIndex | None = None,
    parts: Sequence[Collection[str]] = (),
) -> Evidence:
    """Search for the intent's terms, rank what was found, and read the best regions.

    Args:
        intent: The prompt, read.
        reader: Reads the project's files (for ranking and structure; the model sees ``view``).
        run_tools: Makes the tool calls.
        max_lines: The most lines of excerpts.
        extra_hits: Lines known to matter already (``path``, ``line``), e.g. from a traceback.
        companion_tests: Also show the end of the test file of each source file shown
            (``tests/test_mod.py`` for ``pkg/mod.py``), where a new test would go.
        symbols: The project's names: with them, the lines defining the names the best lines
            use (``self.default_key_derivation``, ``DEFAULT_THRESHOLD``) are shown too.
        parts: For a prompt that asks several things, the terms of each part
            (:func:`.intent.question_parts`): the best hit of each part is shown whatever the others score.

    """
    evidence = Evidence()
    terms = searched_terms(intent.terms)
    if parts:  # each part gets its share of the searches, its strongest terms first
        share = max(2, MAX_SEARCHES // len(parts))
        by_part = [searched_terms([t for t in intent.terms if t.text in part])[:share] for part in parts]
        terms = list(dict.fromkeys([*(t for part in by_part for t in part), *terms]))[
            : MAX_SEARCHES + len(parts)
        ]
    files = [term for term in intent.terms if term.is_file][:2]
    calls: list[ToolCall] = [("grep", {"pattern": term_pattern(term)}) for term in terms]
    calls.extend(("glob", {"pattern": f"**/{PurePosixPath(term.text).name}"}) for term in files)
    evidence.searched = [args["pattern"] for _, args in calls]
    outcomes = await run_tools(calls) if calls else []
    hits: dict[tuple[str, int], Hit] = {}
    for (name, _args), outcome in zip(calls, outcomes, strict=True):
        if name != "grep" or not outcome.ok:
            continue
        for path, line in outcome.metadata.get("hits", []):
            hits.setdefault((str(path), int(line)), Hit(str(path), int(line), ""))
    file_paths = [
        line.strip()
        for (name, _), outcome in zip(calls, outcomes, strict=True)
        if name == "glob" and outcome.ok
        for line in outcome.content.splitlines()
        if line.strip() and not line.startswith(("Found", "No files", "("))
    ]
    for path, line in extra_hits:
        hits.setdefault((path, line), Hit(path, line, "", score=6.0))
    found_lines = {
        args["pattern"]: len(outcome.metadata.get("hits", []))
        for (name, args), outcome in zip(calls, outcomes, strict=True)
        if name == "grep" and outcome.ok
    }
    intent = replace(
        intent,
        terms=tuple(
            _weighed_by_specificity(term, found_lines.get(term_pattern(term))) for term in intent.terms
        ),
    )
    ranked = rank_hits(list(hits.values()), intent, reader)
    regions = choose_regions(
        ranked,
        reader,
        max_lines=max_lines,
        firsts=_best_of_each_part(ranked, parts, {term.text: term.weight for term in intent.terms}),
    )
    for path in file_paths[:2]:
        if not any(region.path == path for region in regions) and reader.read_text(path) is not None:
            regions.append(Region(path, 1, 40, score=5.0, label="the file named"))
    if companion_tests:
        regions.extend(_companion_test_regions(regions, reader))
    if not regions:
        return evidence
    views = await run_tools(
        [("view", {"path": r.path, "offset": r.start - 1, "limit": r.end - r.start + 1}) for r in regions]
    )
    for region, view in zip(regions, views, strict=True):
        if view.ok:
            marked = (hit.line for hit in ranked if hit.path == region.path and hit.terms)
            evidence.regions.append(region)
            evidence.excerpts.append(Excerpt.from_view(region, view.content, marked))
    covered = {(r.path, line) for r in evidence.regions for line in range(r.start, r.end + 1)}
    evidence.other_hits = [hit for hit in ranked if (hit.path, hit.line) not in covered][:MAX_OTHER_HITS]
    if symbols is not None:
        evidence.definitions = _definitions_used(evidence, ranked, symbols, reader)
    return evidence


def _weighed_by_specificity(term: SearchTerm, lines: int | None) -> SearchTerm:
    """A word the user wrote in prose says less the more lines of the project have it.

    "countby" on 12 lines names something; "next" on 25 or "function" on 100 hardly does, and
    "build" on 100 lines of a library with a ``build`` property is the verb. A name written as
    code keeps its weight: the user chose it.
    """
    if not term.prose or not lines:
        return term
    factor = min(1.0, max(MIN_SPECIFICITY, 1.25 - 0.15 * math.log2(lines)))
    return replace(term, weight=term.weight * factor, common=lines > COMMON_WORD_LINES)


def _best_of_each_part(
    ranked: list[Hit], parts: Sequence[Collection[str]], weights: dict[str, float]
) -> list[Hit]:
    """For each part of a question, the hit that matches most of what that part asks.

    Ranked by the whole question, the hits of one part can crowd out another's; each part's own
    best is taken first (when it matches more than one weak word: ``MIN_PART_MATCH``).
    """
    firsts: list[Hit] = []
    for part in parts:

        def part_score(hit: Hit, part: Collection[str] = part) -> float:
            return sum(weights.get(term, 0.0) for term in hit.terms if term in part)

        best = max(ranked, key=lambda hit: (part_score(hit), hit.score), default=None)
        if best is not None and part_score(best) >= MIN_PART_MATCH and best not in firsts:
            firsts.append(best)
    return firsts


def _definitions_used(
    evidence: Evidence, ranked: list[Hit], symbols: SymbolIndex, reader: ProjectReader
) -> list[Hit]:
    """The lines defining the names the excerpts' best lines use, where no excerpt shows them.

    A default is often a name defined elsewhere (``key_derivation = self.default_key_derivation``):
    the answer is on the line defining it, one step away from every word of the question.
    """
    shown = {(r.path, line) for r in evidence.regions for line in range(r.start, r.end + 1)}
    best_lines = [hit for hit in ranked if (hit.path, hit.line) in shown and hit.terms][:MAX_USED_LINES]
    found: list[Hit] = []
    for hit in best_lines:
        for name in dict.fromkeys(_NAME.findall(hit.text)):
            definitions = [
                symbol
                for symbol in symbols.definitions(name)
                if symbol.kind in ("variable", "function", "class") and not _TEST_PATH.search(symbol.path)
            ]
            if len(definitions) != 1 or (definitions[0].path, definitions[0].line) in shown:
                continue  # unknown, ambiguous, or already in view
            symbol = definitions[0]
            lines = (reader.read_text(symbol.path) or "").splitlines()
            row = Hit(symbol.path, symbol.line, lines[symbol.line - 1] if symbol.line <= len(lines) else "")
            if all((row.path, row.line) != (other.path, other.line) for other in found):
                found.append(row)
            if len(found) >= MAX_DEFINITIONS:
                return found
    return found


def searched_terms(terms: Sequence[SearchTerm]) -> list[SearchTerm]:
    """The terms to search for, strongest first, at most :data:`MAX_SEARCHES`.

    A phrase of three words is left out: every line it matches, the search for its first two
    words finds too (:func:`rank_hits` still scores lines by it), and the search is better spent
    on a single word no phrase covers ("lock" in "which kind of lock").
    """
    searched = [term for term in terms if not term.is_file and (term.exact or term.text.count("_") < 2)]
    return searched[:MAX_SEARCHES]


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
    if _ASKS_FOR_EXCEPTION.search(" ".join(intent.words)):
        hits = hits + _raise_hits(hits, reader)
    wants_tests = bool(intent.failing_tests) or any("test" in t.text.lower() for t in intent.terms)
    for hit in hits:
        hit.score += 0.5 * len(terms_per_file.get(hit.path, ()))
        if hit.path.endswith(".py") and _in_overload_stub(reader.read_text(hit.path) or "", hit.line):
            hit.score *= 0.3  # a typing stub says what the real definition below says, without the code
        if _TEST_PATH.search(hit.path) and not wants_tests:
            hit.score *= 0.5
        if PurePosixPath(hit.path).suffix in _DOC_SUFFIXES and intent.kind != "tour":
            hit.score *= 0.6
    return sorted(hits, key=lambda hit: (-hit.score, hit.path, hit.line))


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
        if not hit.terms or not hit.path.endswith(".py") or _TEST_PATH.search(hit.path):
            continue
        block = _enclosing_block(reader.read_text(hit.path) or "", hit.line)
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
    block = _enclosing_block(reader.read_text(hit.path) or "", hit.line)
    return block is not None and block[0].startswith("def ")


def choose_regions(
    ranked: list[Hit], reader: ProjectReader, *, max_lines: int, firsts: Sequence[Hit] = ()
) -> list[Region]:
    """Cut the best hits to the code around them, merging overlaps, within ``max_lines`` in all.

    ``firsts`` are taken before the rest, in their order (the best hit of each part of a question).
    """
    regions: list[Region] = []
    used = 0
    floor = MIN_REGION_SHARE * max((hit.score for hit in ranked), default=0.0)
    for hit in [*firsts, *ranked]:
        if len(regions) >= MAX_REGIONS or used >= max_lines or hit.score <= 0:
            break
        if hit.score < floor and hit not in firsts:
            break  # weak next to the best: noise a small model would answer from
        if any(r.path == hit.path and r.start <= hit.line <= r.end for r in regions):
            continue
        region = region_around(hit, reader)
        room = max_lines - used
        if region.size > room:
            if room < 8:
                break
            start = max(region.start, min(hit.line - 3, region.end - room + 1))
            region = Region(region.path, start, start + room - 1, region.score, region.label)
        regions.append(region)
        used += region.size
    return _merged(regions)


def region_around(hit: Hit, reader: ProjectReader) -> Region:
    """The code around ``hit``: its enclosing function (Python), else a window of lines."""
    text = reader.read_text(hit.path) or ""
    total = max(1, text.count("\n") + 1)
    if hit.path.endswith(".py"):
        block = _enclosing_block(text, hit.line)
        if block is not None:
            name, start, end = block
            if end - start + 1 <= MAX_FUNCTION_LINES:
                return Region(hit.path, start, end, hit.score, name)
            elided = _long_docstring(text, start)
            if elided and not elided[0] <= hit.line <= elided[1]:
                whole = Region(hit.path, start, end, hit.score, name, elided)
                if whole.size <= MAX_FUNCTION_LINES:
                    return whole  # its code, with the docstring cut to its first line
            if hit.line - start < MAX_FUNCTION_LINES - 10:
                return Region(hit.path, start, start + MAX_FUNCTION_LINES - 1, hit.score, name)
            return Region(hit.path, max(start, hit.line - 12), min(end, hit.line + 12), hit.score, name)
    before, after = (2, 8) if PurePosixPath(hit.path).suffix in _DOC_SUFFIXES else (4, 10)
    return Region(hit.path, max(1, hit.line - before), min(total, hit.line + after), hit.score)


def _enclosing_block(text: str, line: int) -> tuple[str, int, int] | None:
    """The innermost function (or small class) around ``line``: (label, first line, last line)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    best: tuple[str, int, int] | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        end = node.end_lineno or node.lineno
        if not start <= line <= end:
            continue
        if isinstance(node, ast.ClassDef) and line != node.lineno and end - start + 1 > MAX_FUNCTION_LINES:
            continue  # a line in a big class body: a window around it says more than the class head
        kind = "class" if isinstance(node, ast.ClassDef) else "def"
        if best is None or start >= best[1]:
            best = (f"{kind} {node.name}", start, end)
    return best


def _companion_test_regions(regions: list[Region], reader: ProjectReader) -> list[Region]:
    """The last lines of the test file of each Python source file among ``regions``, at most two."""
    shown = {region.path for region in regions}
    files = [path for path in project_files(reader.root) if path.endswith(".py")]
    found: list[Region] = []
    for region in regions:
        if _TEST_PATH.search(region.path) or not region.path.endswith(".py"):
            continue
        wanted = f"test_{PurePosixPath(region.path).name}"
        for path in files:
            if PurePosixPath(path).name == wanted and path not in shown:
                total = (reader.read_text(path) or "").count("\n")
                found.append(Region(path, max(1, total - 14), max(1, total), 1.0, "end of its test file"))
                shown.add(path)
                break
    return found[:2]


def _merged(regions: list[Region]) -> list[Region]:
    """Regions of one file that overlap or touch become one; order (by score) is kept."""
    merged: list[Region] = []
    for region in regions:
        for index, other in enumerate(merged):
            if other.path == region.path and region.start <= other.end + 1 and other.start <= region.end + 1:
                merged[index] = Region(
                    other.path,
                    min(other.start, region.start),
                    max(other.end, region.end),
                    max(other.score, region.score),
                    other.label or region.label,
                    other.elided or region.elided,
                )
                break
        else:
            merged.append(region)
    return merged


@functools.lru_cache(maxsize=64)
def _docstrings(text: str) -> dict[int, tuple[int, int]]:
    """The first and last line of each function's docstring, by the function's first line."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    found: dict[int, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                found[start] = (first.lineno, first.end_lineno or first.lineno)
    return found


def _long_docstring(text: str, function_start: int) -> tuple[int, int] | None:
    """The lines to leave out of the docstring of the function starting at ``function_start``.

    All but its first and last line, when that is more than three lines: an explanation needs
    the code, and a long docstring would push the code out of a 40-line excerpt.
    """
    lines = _docstrings(text).get(function_start)
    if lines is None or lines[1] - lines[0] < 4:
        return None
    return lines[0] + 1, lines[1] - 1
