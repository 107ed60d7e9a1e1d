"""Evidence for a small model: search the project for a prompt's terms, rank the hits, read the best.

The searches and reads are real tool calls (``grep``, ``glob``, ``view``) made through the agent,
so permission rules, events and the stored session see them like any other call. What is done here
is the part a 1.5B model does badly: choosing the searches, ranking what they found (a definition
of an asked-about name beats a mention; a line matching several terms beats one matching one), and
cutting each hit to the code around it (the enclosing function, for Python) within a line budget.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from nestor.runtime.small.intent import Intent, SearchTerm
from nestor.runtime.small.project import project_files
from nestor.runtime.small.reader import ProjectReader


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What one tool call returned: its text for the model and its structured metadata."""

    content: str
    metadata: dict[str, Any]
    ok: bool


ToolCall = tuple[str, dict[str, Any]]
RunTools = Callable[[Sequence[ToolCall]], Awaitable[list[ToolOutcome]]]
"""Runs tool calls (in parallel, through the agent's permission gate) and returns their outcomes."""

MAX_SEARCHES = 8
MAX_REGIONS = 4
MAX_EVIDENCE_LINES = 70
MAX_FUNCTION_LINES = 40
MAX_OTHER_HITS = 6

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
        body = [
            f"{number}: {code}" if numbered and (number == first or number in self.marked) else code
            for number, code in self.lines
        ]
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

    """
    evidence = Evidence()
    terms = searched_terms(intent.terms)
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
    ranked = rank_hits(list(hits.values()), intent, reader)
    regions = choose_regions(ranked, reader, max_lines=max_lines)
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
    return evidence


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
                names += term.exact
                if _defines(hit.text, term):
                    hit.score += _definition_bonus(hit.text, term, fitted) * term.weight
        if names > 1:  # a line naming several of the user's identifiers ties them together
            hit.score *= 1.0 + 0.25 * (names - 1)
        terms_per_file.setdefault(hit.path, set()).update(hit.terms)
    wants_tests = bool(intent.failing_tests) or any("test" in t.text.lower() for t in intent.terms)
    for hit in hits:
        hit.score += 0.5 * len(terms_per_file.get(hit.path, ()))
        if _TEST_PATH.search(hit.path) and not wants_tests:
            hit.score *= 0.5
        if PurePosixPath(hit.path).suffix in _DOC_SUFFIXES and intent.kind != "tour":
            hit.score *= 0.6
    return sorted(hits, key=lambda hit: (-hit.score, hit.path, hit.line))


def _definition_bonus(line: str, term: SearchTerm, fitted: set[str]) -> float:
    """What defining ``term`` on ``line`` adds to the line's score, per unit of the term's weight.

    The definition of a name the user wrote is what most questions are about, the more so when
    it fits the name's qualifier. One that does not fit, when another does, defines something
    else: it ranks below the lines that merely use the name.
    """
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
    name = re.escape(term.text) if term.exact else "[_ -]?".join(map(re.escape, term.text.split("_")))
    flags = 0 if term.exact else re.IGNORECASE
    return bool(
        re.search(_DEFINITION.format(name=name), line, flags)
        or re.search(_ASSIGNMENT.format(name=name), line, flags)
    )


def choose_regions(ranked: list[Hit], reader: ProjectReader, *, max_lines: int) -> list[Region]:
    """Cut the best hits to the code around them, merging overlaps, within ``max_lines`` in all."""
    regions: list[Region] = []
    used = 0
    for hit in ranked:
        if len(regions) >= MAX_REGIONS or used >= max_lines or hit.score <= 0:
            break
        if any(r.path == hit.path and r.start <= hit.line <= r.end for r in regions):
            continue
        region = region_around(hit, reader)
        room = max_lines - used
        if region.end - region.start + 1 > room:
            if room < 8:
                break
            start = max(region.start, min(hit.line - 3, region.end - room + 1))
            region = Region(region.path, start, start + room - 1, region.score, region.label)
        regions.append(region)
        used += region.end - region.start + 1
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
                )
                break
        else:
            merged.append(region)
    return merged
