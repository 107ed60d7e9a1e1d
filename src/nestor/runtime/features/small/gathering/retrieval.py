"""Evidence for a small model: search the project for a prompt's terms, rank the hits, read the best.

The searches and reads are real tool calls (``grep``, ``glob``, ``view``) made through the agent,
so permission rules, events and the stored session see them like any other call. What is done here
is the part a 1.5B model does badly: choosing the searches, ranking what they found (a definition
of an asked-about name beats a mention; a line matching several terms beats one matching one), and
cutting each hit to the code around it (the enclosing function, for Python) within a line budget.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import replace
from pathlib import PurePosixPath

from nestor.runtime.features.small.gathering.evidence import Evidence, Excerpt, Hit, Region
from nestor.runtime.features.small.gathering.languages import language_of
from nestor.runtime.features.small.gathering.ranking import rank_hits, term_pattern
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.regions import TEST_PATH, choose_regions, companion_test_regions
from nestor.runtime.features.small.gathering.symbols import SymbolIndex
from nestor.runtime.features.small.understanding.intent import Intent, SearchTerm
from nestor.runtime.kernel.driver import ToolCall, ToolOutcome

RunTools = Callable[[Sequence[ToolCall]], Awaitable[list[ToolOutcome]]]
"""Runs tool calls (in parallel, through the agent's permission gate) and returns their outcomes."""

MAX_SEARCHES = 8
KNOWN_HIT_SCORE = 6.0
"""What a line known to matter (``extra_hits``) scores before its terms count."""
MAX_EVIDENCE_LINES = 70
MAX_OTHER_HITS = 6
MIN_SPECIFICITY = 0.4
MIN_PART_MATCH = 1.0
PART_SEARCHES = 6
"""Searches for each part of a several-part question: its words are often all prose, and equal."""
MAX_PART_SEARCHES = 16
"""The most searches for a several-part question, all its parts together."""
PART_WINDOW = 3
"""Lines either side of a hit whose terms count for a part with it (a docstring, a few statements)."""
MAX_DEFINITIONS = 4
WHOLE_FILE_LINES = 120
MAX_USED_LINES = 6
"""The best lines in view whose names' definitions are shown (see ``_definitions_used``)."""
_NAME = re.compile(r"(?<![\w.])(?:self\.|cls\.)?([A-Za-z_]\w*)")
COMMON_WORD_LINES = 40
"""A word the user wrote in prose found on more lines than this is common in the project."""


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
    whole_files: bool = False,
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
        whole_files: Show a file the prompt names whole when it is short (an edit of a README or a
            ``package.json`` needs its end too), instead of its first lines.

    """
    evidence = Evidence()
    terms = searched_terms(intent.terms)
    if parts:  # each part's own words are searched, whatever the other parts' weigh
        by_part = [_searchable([t for t in intent.terms if t.text in part])[:PART_SEARCHES] for part in parts]
        terms = list(dict.fromkeys([*(t for part in by_part for t in part), *terms]))[:MAX_PART_SEARCHES]
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
    for path, line in extra_hits:  # known to matter, whether or not a search found them too
        known = hits.setdefault((path, line), Hit(path, line, ""))
        known.score = max(known.score, KNOWN_HIT_SCORE)
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
        text = reader.read_text(path)
        if text is None:
            continue
        size = text.count("\n") + 1
        if whole_files and size <= WHOLE_FILE_LINES:  # an edit of a small file sees all of it
            regions = [region for region in regions if region.path != path]
            regions.append(Region(path, 1, size, score=5.0, label="the file named, whole"))
        elif not any(region.path == path for region in regions):
            regions.append(Region(path, 1, 40, score=5.0, label="the file named"))
    if companion_tests:
        regions.extend(companion_test_regions(regions, reader))
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
    best is taken first (when it matches more than one weak word: ``MIN_PART_MATCH``). A part
    told in prose ("the payload can't be deserialized") is answered where its words come
    together, not always on one line: a hit counts the part's words within :data:`PART_WINDOW`
    lines of it, each once, in the project's code (tests and documents count a line's own words).
    """
    nearby: dict[tuple[str, int], set[str]] = {}
    for hit in ranked:
        if language_of(hit.path) is None or TEST_PATH.search(hit.path):
            continue  # a test or a README repeats the words of a question without answering it
        for line in range(hit.line - PART_WINDOW, hit.line + PART_WINDOW + 1):
            nearby.setdefault((hit.path, line), set()).update(hit.terms)
    firsts: list[Hit] = []
    for part in parts:

        def part_score(hit: Hit, part: Collection[str] = part) -> float:
            near = nearby.get((hit.path, hit.line), hit.terms) if hit.terms else set[str]()
            return sum(weights.get(term, 0.0) for term in near if term in part)

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
                if symbol.kind in ("variable", "function", "class") and not TEST_PATH.search(symbol.path)
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
    return _searchable(terms)[:MAX_SEARCHES]


def _searchable(terms: Sequence[SearchTerm]) -> list[SearchTerm]:
    """The terms worth a search, in order (see :func:`searched_terms`)."""
    return [term for term in terms if not term.is_file and (term.exact or term.text.count("_") < 2)]
