"""Which functions may hold the bug a failing test shows, likeliest first.

The traceback's frames come first; then what the failing tests call, and, when the failing run
was traced (:mod:`.trace`), every function of the project it ran, ordered by what the request
says of them. The fix steps (:mod:`.fixes`) try the suspects in this order.
"""

from __future__ import annotations

import re
import shlex
import tempfile
import uuid
from collections.abc import Callable, Sequence

from nestor.runtime.features.small.gathering.code_index import CodeIndex, Definition, words_of
from nestor.runtime.features.small.gathering.functions import (
    FunctionSpan,
    called_names,
    function_at,
    functions_named,
    methods_of,
)
from nestor.runtime.features.small.gathering.project import is_test_path, project_files
from nestor.runtime.features.small.gathering.ranking import term_pattern
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.symbols import SymbolIndex
from nestor.runtime.features.small.gathering.trace import ExecutedLines, read_executed_lines, traced_command
from nestor.runtime.features.small.understanding.code_words import OPERATOR_WEIGHT, operator_names
from nestor.runtime.features.small.understanding.intent import Intent
from nestor.runtime.features.small.verifying.verdict import failing_tests
from nestor.runtime.features.small.workspace import TEST_TIMEOUT_S, Workspace, traceback_locations

MAX_SUSPECTS = 6
MAX_DATA_SUSPECTS = 3
MAX_DATA_LINES = 60
"""A longer table is data, not code a bug hides in; its lines would crowd out the functions'."""
CALL_LEVELS = 4
"""How far down from the failing tests' calls suspects are looked for in the code index
(``matches`` -> ``matches_req`` -> ``matches_impl`` -> ``matches_less``), where a deeper function
ranks by what it mentions, not below every shallower one."""
LEVEL_STEP = 0.5
"""What a function one call further from the failing test counts less than one nearer."""
HELPER_LEVELS = 2
"""How deep the test files' own helpers (``assert_match_all``) are followed to the code they call."""
CALLED_BONUS = 2.0
"""What a function the failing test calls directly counts above what it mentions of the request."""
NAMED_BONUS = 3.0
CALLEE_BONUS = 1.5
"""What a suspect gains for each function the failing test calls that calls it."""


def suspects(
    reader: ProjectReader,
    intent: Intent,
    failure: str,
    symbols: SymbolIndex,
    executed: ExecutedLines | None = None,
) -> list[FunctionSpan]:
    """Functions outside the tests that may hold the bug, likeliest first.

    The traceback's frames come first, innermost first. Then the functions the failing tests
    call, the methods of the classes they make and, when the failing run was traced, every
    function of the project it ran, ordered by how much of the request they mention (the
    functions the tests call directly count more); a function it did not run is no suspect.
    """
    found: list[FunctionSpan] = []
    locations = traceback_locations(failure)
    for path, line in reversed(locations):  # the innermost frame is where it went wrong
        if path.endswith(".py") and not is_test_path(path):
            span = function_at(path, reader.read_text(path) or "", line)
            if span is not None and span not in found:
                found.append(span)
    called = set(called_in_tests(reader, intent, locations))
    others: list[FunctionSpan] = []
    if called:
        functions: list[FunctionSpan] = []
        methods: list[FunctionSpan] = []  # of the classes the tests make: the code under test
        for path in project_files(reader.root):
            if path.endswith(".py") and not is_test_path(path):
                source = reader.read_text(path) or ""
                functions.extend(functions_named(path, source, called))
                methods.extend(methods_of(path, source, called))
        others.extend(span for span in [*functions, *methods] if span not in found)
    if executed is not None:
        others = [span for span in others if executed.ran_any(span.path, span.start, span.end)]
        others.extend(
            span
            for span in _functions_ran(symbols, executed)
            if span not in found and span not in others and not is_test_path(span.path)
        )
        likelihood = _suspicion(intent, reader, called, others)
        others.sort(key=lambda span: -likelihood(span))
    found.extend(span for span in others if span not in found)
    return found[:MAX_SUSPECTS]


def code_suspects(
    reader: ProjectReader, index: CodeIndex, intent: Intent, failure: str, prompt: str = ""
) -> list[FunctionSpan]:
    """Suspects in any language with a grammar (:mod:`.code_index`), likeliest first.

    The functions of the failure's frames outside the tests come first, innermost first. Then
    the code the failing tests (named by the runner's output) run: what they call, through the
    test files' own helpers, then what that calls, down :data:`CALL_LEVELS` calls, ordered
    by how much of the request (``prompt``'s operators included) each mentions, a step less for
    each call further from the test; a function that mentions none of it comes after every one
    that does, however near the test (``new``, ``parse``: what every test runs). After them, the
    top-level variables of their files they use (:func:`_data_used`).
    """
    found: list[Definition] = []
    for path, line in reversed(traceback_locations(failure)):
        definition = None if is_test_path(path) else index.enclosing(path, line)
        if definition is not None and definition not in found:
            found.append(definition)
    failed = failing_tests(failure)
    tests = [test for test in index.tests if any(_names_test(name, test.title) for name in failed)]
    names = (
        _through_helpers(index, set().union(*(test.calls for test in tests)))
        if tests
        else {t.text for t in intent.terms if t.exact}
    )
    mentions = _mentions(intent, reader, operator_names(prompt))
    depth: dict[Definition, int] = {}
    # Names in sorted order: of two that rank alike, the same comes first on every run.
    level = [d for name in sorted(names) for d in index.defined(name) if _is_code(d) and d not in found]
    for step in range(CALL_LEVELS):
        level = [d for d in dict.fromkeys(level) if d not in depth]
        depth.update((d, step) for d in level)
        callees = sorted({call.name for call in index.calls if call.caller in level})
        level = [d for name in callees for d in index.defined(name) if _is_code(d) and d not in found]
    # What mentions the request comes before what is only near the test: stable, so nearer first.
    score = {d: mentions(d) for d in depth}
    ranked = sorted(depth, key=lambda d: (score[d] <= 0, -(score[d] - LEVEL_STEP * depth[d])))
    found.extend(d for d in ranked if d not in found)
    functions = [FunctionSpan(d.path, d.name, d.line, d.end) for d in found][:MAX_SUSPECTS]
    return functions + _data_used(reader, index, functions)


def _through_helpers(index: CodeIndex, names: set[str]) -> set[str]:
    """``names`` and what the test files' own functions among them call, :data:`HELPER_LEVELS` deep.

    A test's helpers are part of the test: ``assert_match_all`` calls ``matches``.
    """
    found = set(names)
    for _ in range(HELPER_LEVELS):
        helpers = {d for name in found for d in index.defined(name) if is_test_path(d.path)}
        more = {call.name for call in index.calls if call.caller in helpers} - found
        if not more:
            break
        found |= more
    return found


def _data_used(reader: ProjectReader, index: CodeIndex, functions: list[FunctionSpan]) -> list[FunctionSpan]:
    """The top-level variables of the suspects' files that they use: tables and constants.

    A wrong value in a table (``kb: 1000`` in the map of units) fails the tests of every function
    that reads it, and is in none of them.
    """
    texts: dict[str, str] = {}
    for span in functions:
        texts[span.path] = texts.get(span.path, "") + span.text(reader.read_text(span.path) or "")
    used = [
        definition
        for definition in index.definitions
        if definition.kind == "variable"
        and definition.owner is None
        and definition.path in texts
        and definition.end - definition.line < MAX_DATA_LINES
        and re.search(rf"(?<![\w$.]){re.escape(definition.name)}(?![\w$])", texts[definition.path])
    ]
    return [FunctionSpan(d.path, d.name, d.line, d.end) for d in used][:MAX_DATA_SUSPECTS]


def _names_test(name: str, title: str) -> bool:
    """Whether a runner's name for a failed test (``mod::test_x``, a TAP title) is ``title``'s test."""
    name = name.strip()
    return title == name or title.endswith(f" › {name}") or name.rsplit("::", 1)[-1] == title


def _is_code(definition: Definition) -> bool:
    return definition.kind in ("function", "method") and not is_test_path(definition.path)


def _mentions(
    intent: Intent, reader: ProjectReader, operators: Sequence[tuple[str, ...]] = ()
) -> Callable[[Definition], float]:
    """How often a function's text has the request's words (up to three times each), weighted.

    The names of the operators the request writes count too, as identifiers' words
    (``matches_less`` for ``<``).
    """
    patterns = [(term.weight, re.compile(term_pattern(term))) for term in intent.terms if not term.is_file]

    def count(definition: Definition) -> float:
        lines = (reader.read_text(definition.path) or "").splitlines()
        text = "\n".join(lines[definition.line - 1 : definition.end])
        score = sum(weight * min(3, len(pattern.findall(text))) for weight, pattern in patterns)
        if operators:
            identifiers = [words_of(name) for name in re.findall(r"[A-Za-z_]\w*", text)]
            uses = sum(any(_has_words(words, name) for name in operators) for words in identifiers)
            score += OPERATOR_WEIGHT * min(3, uses)
        return score

    return count


def _has_words(words: list[str], name: tuple[str, ...]) -> bool:
    """Whether ``name``'s words occur in ``words`` one after the other."""
    return any(tuple(words[start : start + len(name)]) == name for start in range(len(words) - len(name) + 1))


def called_in_tests(reader: ProjectReader, intent: Intent, locations: list[tuple[str, int]]) -> list[str]:
    """Names the failing tests call: the code under test, which a traceback inside a test omits.

    The tests are the ones the user named (found by their ``def``) and the test frames of the
    failure's traceback.
    """
    places = [(path, line) for path, line in locations if path.endswith(".py") and is_test_path(path)]
    if intent.failing_tests:
        wanted = re.compile(rf"^\s*(?:async\s+)?def\s+(?:{'|'.join(map(re.escape, intent.failing_tests))})\b")
        for path in project_files(reader.root):
            if path.endswith(".py") and is_test_path(path):
                lines = (reader.read_text(path) or "").splitlines()
                places.extend((path, number) for number, line in enumerate(lines, 1) if wanted.match(line))
    names: list[str] = []
    for path, line in places:
        names.extend(called_names(reader.read_text(path) or "", line))
    return list(dict.fromkeys(names))[:4]


async def trace(work: Workspace, command: str | None) -> ExecutedLines | None:
    """Run ``command`` (the failing tests) once more with the line tracer (see :mod:`.trace`)."""
    if command is None or "pytest" not in command:
        return None
    directory = f"{tempfile.gettempdir()}/nestor-trace-{uuid.uuid4().hex[:12]}"
    (outcome,) = await work.host.run_tools(
        [
            (
                "bash",
                {
                    "command": f"{traced_command(command, directory)}; rm -rf {shlex.quote(directory)}",
                    "timeout": TEST_TIMEOUT_S,
                },
            )
        ]
    )
    return read_executed_lines(outcome.content) if outcome.ok else None


def _functions_ran(symbols: SymbolIndex, executed: ExecutedLines) -> list[FunctionSpan]:
    """The project's functions and methods a traced run ran (their body, not just their ``def``)."""
    found: list[FunctionSpan] = []
    for path, lines in executed.by_file.items():
        for symbol in symbols.in_file(path):
            if symbol.kind in ("function", "method") and any(symbol.line < n <= symbol.end for n in lines):
                found.append(FunctionSpan(path, symbol.name, symbol.line, symbol.end))
    return found


def _suspicion(
    intent: Intent, reader: ProjectReader, called: set[str], candidates: list[FunctionSpan]
) -> Callable[[FunctionSpan], float]:
    """How likely a function the failing test ran holds the bug, by what the request says of it.

    A function the test calls directly, or that the request names, counts most; then one those
    functions call themselves (one step down: "the salt I pass to dumps() gets ignored" is lost in
    the ``make_signer(salt)`` that ``dumps`` calls); then how often it has the request's words
    (up to three times each). A function that merely calls a name the request wrote (an
    ``is_text_serializer`` that calls ``dumps``) gains nothing by it.
    """
    names = {term.text for term in intent.terms if term.exact}
    words = [
        (term.weight, re.compile(term_pattern(term)))
        for term in intent.terms
        if term.prose and not term.exact
    ]
    callees: dict[str, int] = {}
    for span in candidates:
        if span.name in called:
            source = reader.read_text(span.path) or ""
            for name in set(called_names(source, span.start)):
                callees[name] = callees.get(name, 0) + 1

    def likelihood(span: FunctionSpan) -> float:
        text = span.text(reader.read_text(span.path) or "")
        score = CALLED_BONUS * (span.name in called) + NAMED_BONUS * (span.name in names)
        score += CALLEE_BONUS * callees.get(span.name, 0)
        return score + sum(weight * min(3, len(pattern.findall(text))) for weight, pattern in words)

    return likelihood
