"""Whether a change holds: every file it touched still parses, and the tests say it works.

A change holds when no file it changed has a syntax error it did not have before, and the
project's tests (when it has a test command) pass after it; a request that is not a fix, made in a
project whose tests already failed, holds when no test fails that did not fail before. A change
that does not hold is undone by the harness (:meth:`.workspace.Workspace.restore`), so "done" is
never reported over failing tests or a broken file.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from nestor.runtime.features.small.gathering.languages import parses_cleanly
from nestor.runtime.features.small.verifying.snapshot import Snapshot

_FAILED_TEST = (
    re.compile(r"^FAILED (\S+)", re.MULTILINE),  # pytest -q
    re.compile(r"^ERROR (\S+)", re.MULTILINE),
    re.compile(r"^\s*not ok \d+ - (.+)$", re.MULTILINE),  # TAP: node --test, tape
    re.compile(r"^\s*✖ (.+?)(?: \([\d.]+m?s\))?$", re.MULTILINE),  # node --test's spec reporter
    re.compile(r"^test (\S+) \.\.\. FAILED$", re.MULTILINE),  # cargo test
    re.compile(r"^---- (\S+) stdout ----$", re.MULTILINE),  # cargo test --quiet
    re.compile(r"^--- FAIL: (\S+)", re.MULTILINE),  # go test
    re.compile(r"^(?:FAIL|ERROR): (\S+ \(\S+\))$", re.MULTILINE),  # unittest
)
_TAIL_LINES = 15
_ACTUAL = (
    re.compile(r"^\s*actual: (.+)$", re.MULTILINE),  # node's assert (TAP), chai
    re.compile(r"^\s*Received:? +(.+)$", re.MULTILINE),  # jest, vitest
    re.compile(r"^\s*left: (.+)$", re.MULTILINE),  # Rust's assert_eq!(actual, expected)
    re.compile(r"^E\s+(?:AssertionError: )?assert (.+?) (?:==|!=|in|is) ", re.MULTILINE),  # pytest
    re.compile(r"^AssertionError: (.+?) != ", re.MULTILINE),  # unittest's assertEqual(actual, expected)
    re.compile(r"^\s*got:? +(.+)$", re.MULTILINE),  # go test's "got"
)
_LITERAL = re.compile(r"""(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])|"([^"]{2,})"|'([^']{2,})'""")


def broken_files(snapshot: Snapshot, read: Callable[[str], str | None]) -> list[str]:
    """The changed files that now have a syntax error they did not have before the change."""
    broken: list[str] = []
    for path in snapshot.changed():
        now = read(path)
        if now is None or parses_cleanly(path, now) is not False:
            continue
        original = snapshot.original(path)
        was_clean = original is None or parses_cleanly(path, original.decode("utf-8", "replace")) is not False
        if was_clean:
            broken.append(path)
    return broken


def failing_tests(output: str) -> set[str]:
    """The names of the tests a test run's output says failed (empty when it names none)."""
    return {match.strip() for pattern in _FAILED_TEST for match in pattern.findall(output)}


def actual_values(output: str) -> set[str]:
    """The literals a test run's output says the code produced where the tests expected others.

    Numbers (but 0, 1 and -1, which are everywhere) and quoted strings of the "actual" side of the
    failed assertions, in the forms the common runners print. A suspect line that holds one
    of them likely made it (a table's ``kb: 1000`` for a ``1000 !== 1024``).
    """
    values = (value for pattern in _ACTUAL for value in pattern.findall(output))
    return {literal for value in values for literal in _literals(value) if literal not in ("0", "1", "-1")}


def holds_literal(line: str, literals: set[str]) -> bool:
    """Whether ``line`` has one of ``literals`` as a number or as a quoted string of its own."""
    return any(literal in literals for literal in _literals(line))


def _literals(text: str) -> list[str]:
    """The numbers of ``text`` and the contents of its quoted strings."""
    return [match.group(1) or match.group(2) or match.group() for match in _LITERAL.finditer(text)]


async def change_problem(
    snapshot: Snapshot,
    read: Callable[[str], str | None],
    run_tests: Callable[[str | None], Awaitable[str | None]],
    command: str | None,
    before: str | None,
    *,
    fixing: bool,
) -> str | None:
    """What is wrong with the change in ``snapshot``, or None when it holds.

    Args:
        snapshot: The files the change touched, as they were.
        read: Reads a project file as it is now.
        run_tests: Runs a test command; the tail of its output when it fails, None when it passes.
        command: The project's test command (None: there is none, only the syntax is checked).
        before: The tests' output before the change (None when they passed, or none ran).
        fixing: The request is to make failing tests pass: they must pass now, all of them.

    """
    if broken := broken_files(snapshot, read):
        return "it left a syntax error in " + ", ".join(broken)
    if command is None:
        return None
    after = await run_tests(command)
    if after is None:
        return None
    if before is not None and not fixing:
        failing_now, failing_before = failing_tests(after), failing_tests(before)
        if failing_now and failing_now <= failing_before:
            return None  # nothing fails that did not fail before the change
    tail = "\n".join(after.strip().splitlines()[-_TAIL_LINES:])
    return f"the tests (`{command}`) fail after it:\n{tail}"
