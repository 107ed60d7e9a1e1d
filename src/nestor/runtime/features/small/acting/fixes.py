"""Fixing a failing test: the suspects' statements changed one at a time, then rewritten whole.

The statements of the suspects, likeliest first, are filled in by the model one at a time
(:mod:`.infill`), each then with its one-token repairs (:mod:`.mutations`: a test run each, no model
call) when the model's versions fail; when nothing works the model rewrites the suspects whole
(:mod:`.functions`). Each version is tried with the tests and undone when they still fail, so
attempts never pile up on each other. Where a tracer said which lines the failing tests ran, the
suspects' order decides, not the cost: a repair that only makes a weak test pass (a check turned
round) must not come before the likelier line. Without one the order of the lines is a guess
(the suspects' lines interleaved), and a model's fill-in costs ten or more test runs: so the
one-token repairs of every planned line come first (``repairs_first``), a test run each.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from nestor.runtime.features.small.acting import prompts
from nestor.runtime.features.small.acting.infill import Gap, candidates, change_size, gaps, parses
from nestor.runtime.features.small.acting.mutations import mutants
from nestor.runtime.features.small.gathering.functions import FunctionSpan, function_at, rewritten_function
from nestor.runtime.features.small.gathering.languages import language_of
from nestor.runtime.features.small.gathering.project import is_test_path
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.trace import ExecutedLines
from nestor.runtime.features.small.verifying.verdict import actual_values, holds_literal
from nestor.runtime.features.small.workspace import (
    EDIT_ATTEMPTS,
    EDIT_MAX_TOKENS,
    PlannedEdit,
    Workspace,
    change_report,
    traceback_locations,
    trim_lines,
)

INFILL_MAX_TOKENS = 48
INFILL_GAPS_PER_FUNCTION = 16
INFILL_GAPS = 30
INFILL_TRIES = 36
INFILL_SAMPLES = 3
INTERLEAVED_GAPS = 3
MUTANT_TRIES = 30
"""One-token repairs tried with the tests at most, over all the gaps: a test run each, so a slow
suite (pytest on a loaded machine: 2-4 s a run) spends at most a minute or two on them."""


@dataclass(frozen=True, slots=True)
class _GapTrial:
    """One gap of a suspect whose versions are tried with the tests (see ``fix_by_infilling``)."""

    span: FunctionSpan
    gap: Gap
    source: str
    command: str
    named: str | None
    settles: Callable[[str | None], bool]

    @property
    def cut(self) -> str:
        """The gap's lines as they are."""
        return self.gap.cut(self.source)

    def edit(self, candidate: str, *, undo: bool = False) -> PlannedEdit:
        """The edit that puts ``candidate`` in the gap (or, with ``undo``, takes it out again)."""
        original, changed = self.span.text(self.source), self.gap.filled(self.source, candidate)
        return (
            PlannedEdit(self.span.path, changed, original)
            if undo
            else PlannedEdit(self.span.path, original, changed)
        )

    def report(self, candidate: str) -> str:
        """The answer for the fix that put ``candidate`` in the gap: the line before and after, tests pass."""
        change = f"In {self.span.label}, `{self.cut.strip()}` is now `{candidate.strip()}`."
        return change_report([self.span.path], change, self.command, passed=True)

    def parses(self, candidate: str) -> bool:
        """Whether the file is valid code with ``candidate`` in the gap."""
        edit = self.edit(candidate)
        return parses(self.source.replace(edit.old, edit.new, 1), self.span.path)


async def fix_by_infilling(
    work: Workspace,
    suspects: list[FunctionSpan],
    failure: str,
    command: str,
    named: str | None,
    settles: Callable[[str | None], bool] = lambda failure: failure is None,
    *,
    executed: ExecutedLines | None = None,
    interleave: bool = False,
    repairs_first: bool = False,
) -> str | None:
    """Fix failing tests by changing one statement of a suspect at a time.

    The gaps are planned likeliest first (a line holding a value the failing tests got leads);
    the model fills each in, and when none of its versions works, the gap's one-token repairs
    are tried. With ``repairs_first`` (see the module's docstring), only the lines holding such
    a value are filled in first; then every gap's repairs are tried before the model is asked
    about the rest. Each version is tried with the tests and undone unless the tests' outcome
    ``settles`` it (by default: they pass). Returns the report of the fix, or None when none
    was found (or the model cannot fill in).
    """
    frames = traceback_locations(failure)
    planned = _planned_gaps(work, suspects, frames, executed, interleave=interleave)
    # A line holding a value the failing tests got (``1000 !== 1024``: a line writing 1000) leads.
    literals = actual_values(failure)
    hinted: list[_GapTrial] = []
    others: list[_GapTrial] = []
    for span, gap, source in planned:
        trial = _GapTrial(span, gap, source, command, named, settles)
        (hinted if holds_literal(trial.cut, literals) else others).append(trial)
    attempts = _Attempts()
    if not repairs_first:
        return await attempts.each_filled_in(work, hinted + others)
    if (fixed := await attempts.each_filled_in(work, hinted)) is not None:
        return fixed
    for trial in hinted + others:
        if (repaired := await attempts.repaired(work, trial)) is not None:
            return trial.report(repaired)
    return await attempts.each_filled_in(work, others)


@dataclass(slots=True)
class _Attempts:
    """What one fix has tried so far, within its limits: gaps asked about, versions and repairs tried."""

    asked: int = 0
    tried: int = 0
    repairs: set[tuple[str, int, str]] = field(default_factory=set)
    gave_up: bool = False

    async def each_filled_in(self, work: Workspace, trials: list[_GapTrial]) -> str | None:
        """The report of the first of ``trials`` the model's fill-in or a repair fixes, else None.

        Stops for good (``gave_up``) at :data:`INFILL_GAPS` gaps asked about, :data:`INFILL_TRIES`
        versions tried, or when the model cannot fill in.
        """
        for trial in trials:
            if self.gave_up or self.asked >= INFILL_GAPS or self.tried >= INFILL_TRIES:
                self.gave_up = True
                return None
            middle = await work.host.infill(*trial.gap.context(trial.source), max_tokens=INFILL_MAX_TOKENS)
            if middle is None:
                self.gave_up = True
                return None
            self.asked += 1
            for candidate in candidates(middle, trial.cut):
                if not trial.parses(candidate):
                    continue
                self.tried += 1
                if await _passes(work, trial, candidate):
                    return trial.report(await _smallest_passing(work, trial, candidate))
            if (repaired := await self.repaired(work, trial)) is not None:
                return trial.report(repaired)
        return None

    async def repaired(self, work: Workspace, trial: _GapTrial) -> str | None:
        """The first untried one-token repair of the gap that makes the tests pass (it stays), else None.

        :data:`MUTANT_TRIES` test runs at most, over all the gaps.
        """
        for candidate in mutants(trial.cut, language_of(trial.span.path)):
            key = (trial.span.path, trial.gap.first, candidate)
            if len(self.repairs) >= MUTANT_TRIES or key in self.repairs or not trial.parses(candidate):
                continue
            self.repairs.add(key)
            if await _passes(work, trial, candidate):
                return candidate
        return None


def _planned_gaps(
    work: Workspace,
    suspects: list[FunctionSpan],
    frames: list[tuple[str, int]],
    executed: ExecutedLines | None,
    *,
    interleave: bool,
) -> list[tuple[FunctionSpan, Gap, str]]:
    """The gaps to fill in, in order: each suspect's likeliest first (see :func:`.infill.gaps`).

    Suspect after suspect; or, with ``interleave``, :data:`INTERLEAVED_GAPS` of each in turn,
    round after round: without a tracer to say which lines ran, the bug is as likely in a
    helper the first suspect calls as in its own many lines.
    """
    planned: list[list[tuple[FunctionSpan, Gap, str]]] = []
    for span in suspects:
        source = work.reader.read_text(span.path) or ""
        first_lines = [line for path, line in frames if path == span.path]
        ran = (lambda line, path=span.path: executed.ran(path, line)) if executed is not None else None
        found = gaps(source, span, first_lines, ran)[:INFILL_GAPS_PER_FUNCTION]
        planned.append([(span, gap, source) for gap in found])
    if not interleave:
        return [item for items in planned for item in items]
    rounds = max((len(items) for items in planned), default=0)
    return [
        item
        for start in range(0, rounds, INTERLEAVED_GAPS)
        for items in planned
        for item in items[start : start + INTERLEAVED_GAPS]
    ]


async def _passes(work: Workspace, trial: _GapTrial, candidate: str) -> bool:
    """Put ``candidate`` in the trial's gap and run the tests; it stays only if they pass."""
    if not await work.run_edits([trial.edit(candidate)], []):
        return False
    failure = await work.run_tests(trial.named) if trial.named else None
    if failure is None:
        failure = await work.run_tests(trial.command)
    if trial.settles(failure):
        return True
    await work.run_edits([trial.edit(candidate, undo=True)], [])
    return False


async def _smallest_passing(work: Workspace, trial: _GapTrial, passing: str) -> str:
    """Of ``passing`` (in place), more samples of the gap and its one-token repairs, the smallest that passes.

    Tests pass with many changes, some of them wrong for the cases the tests leave out
    (``a > b`` made ``a == b`` where ``a >= b`` was meant); the smallest is likeliest right.
    The repairs cost a test run each and no model call, and only those smaller than the best
    so far are tried.
    """
    best = passing
    for attempt in range(1, INFILL_SAMPLES):
        context = trial.gap.context(trial.source)
        middle = await work.host.infill(*context, max_tokens=INFILL_MAX_TOKENS, attempt=attempt)
        if middle is None:
            break
        best = await _smaller_passing(work, trial, best, candidates(middle, trial.cut))
    return await _smaller_passing(work, trial, best, mutants(trial.cut, language_of(trial.span.path)))


async def _smaller_passing(work: Workspace, trial: _GapTrial, best: str, versions: Iterable[str]) -> str:
    """``best`` (in place), or the last of ``versions``, each smaller than the one before, that passes."""
    for candidate in versions:
        smaller = change_size(candidate, trial.cut) < change_size(best, trial.cut)
        if not smaller or not trial.parses(candidate):
            continue
        await work.run_edits([trial.edit(best, undo=True)], [])
        if await _passes(work, trial, candidate):
            best = candidate
        else:
            await work.run_edits([trial.edit(best)], [])
    return best


async def fix_by_rewriting(
    work: Workspace,
    prompt: str,
    suspects: list[FunctionSpan],
    failure: str,
    command: str,
    named: str | None,
) -> str | None:
    """Fix failing tests by having the model rewrite one suspect function at a time.

    A rewrite that does not make the tests pass is undone before the next attempt, so attempts
    never pile up on each other.
    """
    tests = _failing_test_sources(work.reader, failure)
    notes: list[str] = []
    for attempt in range(EDIT_ATTEMPTS):
        span = suspects[attempt % len(suspects)]
        source = work.reader.read_text(span.path) or ""
        original = span.text(source)
        request = _rewrite_request(prompt, span, original, tests, failure, notes)
        reply = await work.host.ask(prompts.REWRITE, request, max_tokens=EDIT_MAX_TOKENS, attempt=attempt)
        if reply is None:
            return None
        rewritten = rewritten_function(reply, span, original)
        if rewritten is None:
            notes = [
                f"Your reply had no complete, valid `def {span.name}` that differs from the current one."
            ]
            continue
        problems: list[str] = []
        if not await work.run_edits([PlannedEdit(span.path, original, rewritten)], problems):
            notes = problems
            continue
        after = await work.run_tests(named) if named else None
        if after is None:
            after = await work.run_tests(command)
        if after is None:
            return change_report([span.path], f"Rewrote {span.label}.", command, passed=True)
        await work.run_edits([PlannedEdit(span.path, rewritten, original)], [])
        notes = [
            f"Your version of `{span.name}` did not make the tests pass; it was undone. It failed with:\n"
            + trim_lines(after, 12)
        ]
    return change_report([], "", command, passed=False)


def _failing_test_sources(reader: ProjectReader, failure: str) -> str:
    """The source of the test functions the failure's traceback names (at most two)."""
    sources: list[str] = []
    for path, line in traceback_locations(failure):
        if path.endswith(".py") and is_test_path(path):
            source = reader.read_text(path) or ""
            span = function_at(path, source, line)
            if span is not None:
                text = f"# {path}\n{textwrap.dedent(span.text(source))}"
                if text not in sources:
                    sources.append(text)
    return "\n".join(sources[:2])


def _rewrite_request(
    prompt: str, span: FunctionSpan, original: str, tests: str, failure: str, notes: list[str]
) -> str:
    """The rewrite step's prompt: the one function, the failing tests, their output, the request."""
    parts = [f'<function file="{span.path}">\n{textwrap.dedent(original).rstrip()}\n</function>']
    if tests:
        parts.append(f"<failing-test>\n{tests.rstrip()}\n</failing-test>")
    parts.append(f"<test-output>\n{trim_lines(failure, 25)}\n</test-output>")
    if notes:
        parts.append("\n".join(notes))
    parts.append(f"Request: {prompt}\n\nRewrite `{span.name}` so that the failing test passes.")
    return "\n\n".join(parts)
