"""What every step of the small-model harness works with, and the moves they share.

A step (answering, fixing, adding, renaming, editing) is a function of a :class:`Workspace`: the
agent it drives (its tools and its model, through the kernel's :class:`HarnessHost`) and the
project's files (a :class:`ProjectReader`). The state is passed explicitly, so each step can be
read alone. Edits, test runs and the reports of a change are the same for every step.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.understanding.scope import ANY, EditScope
from nestor.runtime.features.small.verifying.snapshot import Snapshot
from nestor.runtime.kernel.driver import HarnessHost, ToolCall, ToolOutcome

EDIT_MAX_TOKENS = 700
EDIT_ATTEMPTS = 3
TEST_TIMEOUT_S = 180
MIN_TEST_TIMEOUT_S = 20
TEST_SLOWDOWN = 4
"""How many times longer than the first run a later run of the same tests may take."""
TEST_RETRY_FACTOR = 4
"""A run that timed out under that limit runs once more with this many times the limit."""
_TRACEBACK_LOCATION = re.compile(
    r"^([\w./-]+\.py):(\d+)(?::| in )"  # pytest's short tracebacks
    r"|(?<![\w./-])([\w./-]+\.(?:[cm]?js|jsx|tsx?|rs)):(\d+):\d+"  # node's stack frames, Rust's panics
    r"|^\s+([\w./-]+_test\.go):(\d+): ",  # go test's `t.Errorf` lines
    re.MULTILINE,
)


@dataclass(frozen=True, slots=True)
class PlannedEdit:
    """One change to make with the ``edit`` tool (``old`` empty: a new file, which ``edit`` creates)."""

    path: str
    old: str
    new: str
    replace_all: bool = False

    def call(self) -> ToolCall:
        """The tool call that makes this edit."""
        arguments: dict[str, object] = {"path": self.path, "old_string": self.old, "new_string": self.new}
        if self.replace_all:
            arguments["replace_all"] = True
        return ("edit", arguments)


@dataclass(frozen=True, slots=True)
class Workspace:
    """One turn's agent and project, as every step of the harness sees them.

    Attributes:
        host: The agent the harness drives: its tool calls and its model.
        reader: Reads the project's files for ranking and structure.
        snapshot: Every file changed this turn as it was before (see :meth:`restore`).
        scope: The files the request allows to change: every edit outside it is refused.
        timings: How long the first run of each test command took (see :meth:`run_tests`).
        missing_runners: The test commands that could not run at all here, each with the line
            that says why (see :meth:`run_tests`).

    """

    host: HarnessHost
    reader: ProjectReader
    snapshot: Snapshot
    scope: EditScope = ANY
    timings: dict[str, float] = field(default_factory=dict[str, float])
    missing_runners: dict[str, str] = field(default_factory=dict[str, str])

    @classmethod
    def of(cls, host: HarnessHost, reader: ProjectReader) -> Workspace:
        """A new turn's workspace: nothing kept yet, every file allowed until a request says otherwise."""
        return cls(host, reader, Snapshot(reader.root))

    async def run_edits(self, edits: list[PlannedEdit], problems: list[str]) -> list[str]:
        """Make ``edits`` in rounds of at most one per file (edits of one file must not race).

        An edit of a file outside :attr:`scope` is not made: it goes to ``problems`` with the
        reason. Each file is kept in :attr:`snapshot` before its first change.
        Returns the files changed; what failed is added to ``problems``.
        """
        applied: list[str] = []
        remaining: list[PlannedEdit] = []
        for edit in edits:
            refusal = self.scope.refusal(edit.path, exists=self._exists(edit.path))
            if refusal is not None:
                problems.append(refusal)
                continue
            self.snapshot.keep(edit.path)
            remaining.append(edit)
        while remaining:
            batch: list[PlannedEdit] = []
            later: list[PlannedEdit] = []
            for edit in remaining:
                (later if any(planned.path == edit.path for planned in batch) else batch).append(edit)
            outcomes = await self.host.run_tools([edit.call() for edit in batch])
            for edit, outcome in zip(batch, outcomes, strict=True):
                if not outcome.ok:
                    problems.append(f"{edit.path}: {outcome.content[:300]}")
                elif edit.path not in applied:
                    applied.append(edit.path)
            remaining = later
        self.reader.forget()
        return applied

    def restore(self, paths: list[str] | None = None) -> list[str]:
        """Put the files changed this turn (or ``paths`` of them) back as they were; see :class:`Snapshot`."""
        restored = self.snapshot.restore(paths)
        self.reader.forget()
        return restored

    def _exists(self, path: str) -> bool:
        resolved = self.reader.resolve(path)
        return resolved is not None and resolved.exists()

    async def run_tests(self, command: str | None) -> str | None:
        """Run the tests; the tail of their output when they fail, None when they pass.

        Once a run of ``command`` has been timed, later runs of it may take
        :data:`TEST_SLOWDOWN` times as long (at least :data:`MIN_TEST_TIMEOUT_S`): a change that
        makes the tests hang (a loop that never ends) costs seconds, not :data:`TEST_TIMEOUT_S`.
        A command that could not run at all (its runner is not installed) goes into
        :attr:`missing_runners`: its failure says nothing of the code.
        """
        if command is None:
            return None
        known = self.timings.get(command)
        limit = (
            TEST_TIMEOUT_S
            if known is None
            else min(TEST_TIMEOUT_S, max(MIN_TEST_TIMEOUT_S, math.ceil(known * TEST_SLOWDOWN)))
        )
        started = time.monotonic()
        outcome = await self._test_run(command, limit)
        if known is None:
            self.timings[command] = time.monotonic() - started
        elif outcome.metadata.get("timed_out") and limit < TEST_TIMEOUT_S:
            # A loaded machine slows every run: a shortened limit's time-out is inconclusive, and a
            # right change undone for it is lost. Once more with a longer limit; a hang stays a hang.
            outcome = await self._test_run(command, min(TEST_TIMEOUT_S, limit * TEST_RETRY_FACTOR))
        if outcome.metadata.get("exit_code") == 0 and outcome.ok:
            return None
        if (missing := runner_missing(outcome)) is not None:
            self.missing_runners[command] = missing
        # node prints its frames with absolute paths: the project's own read as project-relative.
        output = outcome.content.replace(f"{self.reader.root}/", "")
        failures, separator, tail = output.partition(TAIL_SEPARATOR)
        if not separator:
            return output[-4000:]
        return f"{failures[-FAILURE_LINES_CHARS:]}{separator}{tail[-4000:]}"

    async def _test_run(self, command: str, limit: int) -> ToolOutcome:
        (outcome,) = await self.host.run_tools(
            [
                (
                    "bash",
                    {"command": f"set -o pipefail; {command} 2>&1 | {_FAILURES_AND_TAIL}", "timeout": limit},
                )
            ]
        )
        return outcome


TAIL_SEPARATOR = "... (the last lines of the output:)\n"
_RUNNER_MISSING = re.compile(
    r"^.*(?:No module named (?:pytest|tox)\b|--offline was specified).*$", re.MULTILINE
)  # Python without pytest; cargo offline without the crates it needs


def runner_missing(outcome: ToolOutcome) -> str | None:
    """The line saying why a test command could not run at all, or None when it ran.

    The shell could not find or execute a command (exit 127 or 126: ``go`` not installed, a
    package's ``jest`` not in its ``node_modules``), or the runner itself is missing (Python
    without pytest, cargo offline without the crates): the code was never tested.
    """
    lines = [line.strip() for line in outcome.content.splitlines()]
    said = [line for line in lines if line and not line.startswith(("... (the last lines", "Exit code:"))]
    if outcome.metadata.get("exit_code") in (126, 127):
        why = (line for line in said if "not found" in line.lower() or "permission denied" in line.lower())
        return next(why, None) or (said[-1][:200] if said else "the command was not found")
    found = _RUNNER_MISSING.search(outcome.content)
    return found.group().strip()[:200] if found else None


FAILURE_LINES_CHARS = 2000
_FAILURE_LINE = (
    r"not ok |^ *(actual|expected): |^ *(Expected|Received):|^E |^FAILED |^(FAIL|ERROR): |panicked|"
    r"^ *(left|right): "
)
_FAILURES_AND_TAIL = (
    "awk '/" + _FAILURE_LINE + "/ { if (hits < 60) hit[hits++] = $0 } { last[NR % 60] = $0 } "
    'END { for (i = 0; i < hits; i++) print hit[i]; printf "' + TAIL_SEPARATOR.replace("\n", "\\n") + '"; '
    "for (i = (NR > 60 ? NR - 59 : 1); i <= NR; i++) print last[i % 60] }'"
)
"""The lines of a test run that say which test failed with what value (the first 60), then its last 60.

A runner that reports as it goes (node's TAP, cargo) prints the first failures' values far above
its last 60 lines: the fix steps read the failed tests and the values they got from both parts.
"""


def traceback_locations(output: str) -> list[tuple[str, int]]:
    """``(path, line)`` of each frame a test run's output names, in order, without repeats."""
    seen: dict[tuple[str, int], None] = {}
    for match in _TRACEBACK_LOCATION.finditer(output):
        path, line = next((match.group(n), match.group(n + 1)) for n in (1, 3, 5) if match.group(n))
        if "site-packages" in path or "node_modules" in path or PurePosixPath(path).is_absolute():
            continue
        seen.setdefault((path, int(line)), None)
    return list(seen)[:6]


def trim_lines(text: str, count: int) -> str:
    """The last ``count`` lines of ``text``."""
    lines = text.strip().splitlines()
    return "\n".join(lines[-count:])


def undone_report(report: str, problem: str) -> str:
    """The answer for a change that did not hold and was undone: what was tried, and what failed."""
    tried = [
        line
        for line in report.splitlines()
        if line.strip() and not line.startswith(("Tests (", "I could not make a working change"))
    ]
    lines = ["I could not make a working change, so I left every file as it was."]
    if tried:
        lines.append("What I tried: " + " ".join(tried)[:500])
    lines.append(f"What failed: {problem}")
    return "\n".join(lines)


def change_report(changed: list[str], reply: str, command: str | None, passed: bool | None) -> str:
    """What was changed, the model's own sentence about it, and how the tests went."""
    prose = re.sub(r"(?s)<{5,9}\s*SEARCH.*?>{5,9}\s*REPLACE", "", reply)
    sentences = [
        line.strip()
        for line in prose.splitlines()
        if " " in line.strip() and not line.strip().startswith("```")
    ]
    lines = ["Changed " + ", ".join(changed) + "." if changed else "I could not make a working change."]
    if sentences and changed:
        lines.append(" ".join(sentences)[:400])
    if command and passed is not None and changed:  # with nothing changed, no test says anything of it
        lines.append(f"Tests (`{command}`): " + ("pass." if passed else "still fail."))
    return "\n".join(lines)
