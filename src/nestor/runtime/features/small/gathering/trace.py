"""Which lines of the project a failing test runs: where a bug can be, and where it cannot.

A failing assertion names no line of the code under test, and the function it calls may only
hand the work to a helper (``merge_sorted`` to ``_merge_sorted_binary_key``): the bug is in a
line the failing test ran. So the harness runs the failing tests once more with a line tracer,
a pytest plugin of a few lines that ``sys.settrace`` drives and that records only the project's
own files outside its tests, and reads back the lines each function ran. Suspects are then the
functions the test ran, and the statements tried first the ones it ran.

The plugin is written to a private temporary directory and loaded with ``-p``; nothing in the
project changes. The command runs through the ``bash`` tool like every other command.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

PLUGIN_MODULE = "_nestor_line_trace"
MARKER = "NESTOR-TRACE:"
"""Starts the line of the command's output that holds the executed lines as JSON."""

PLUGIN_SOURCE = r'''"""The lines of the project (outside its tests) the tests run. Written by nestor."""
import json
import os
import re
import sys
import threading

import pytest

_ROOT = os.path.realpath(os.getcwd()) + os.sep
_TESTS = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*$|_test\.py$|(^|/)conftest\.py$")
_keep = {}
_lines = {}


def _kept(filename):
    kept = _keep.get(filename)
    if kept is None:
        path = os.path.realpath(filename)
        relative = path[len(_ROOT):] if path.startswith(_ROOT) and os.path.isfile(path) else None
        wanted = relative and "site-packages" not in relative and not _TESTS.search(relative)
        kept = relative if wanted else False
        _keep[filename] = kept
    return kept


def _local(frame, event, arg):
    if event == "line":
        _lines[frame.f_code.co_filename].add(frame.f_lineno)
    return _local


def _global(frame, event, arg):
    if _kept(frame.f_code.co_filename):
        _lines.setdefault(frame.f_code.co_filename, set()).add(frame.f_lineno)
        return _local
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session):
    sys.settrace(_global)
    threading.settrace(_global)
    try:
        yield
    finally:
        sys.settrace(None)
        threading.settrace(None)
        ranges = {}
        for filename, lines in _lines.items():
            spans = []
            for line in sorted(lines):
                if spans and line == spans[-1][1] + 1:
                    spans[-1][1] = line
                else:
                    spans.append([line, line])
            ranges[_kept(filename)] = spans
        with open(os.environ["NESTOR_TRACE_FILE"], "w", encoding="utf-8") as out:
            out.write("%s%s\n" % ({marker!r}, json.dumps(ranges, separators=(",", ":"))))
'''.replace("{marker!r}", repr(MARKER))


@dataclass(frozen=True, slots=True)
class ExecutedLines:
    """The lines of each project file (project-relative path) a test run executed."""

    by_file: Mapping[str, frozenset[int]]

    def ran(self, path: str, line: int) -> bool:
        """Whether ``line`` of ``path`` ran."""
        return line in self.by_file.get(path, frozenset())

    def ran_any(self, path: str, first: int, last: int) -> bool:
        """Whether any line of ``path`` from ``first`` to ``last`` ran."""
        lines = self.by_file.get(path, frozenset())
        return any(first <= line <= last for line in lines)


def traced_command(test_command: str, directory: str) -> str:
    """A shell command that runs ``test_command`` (pytest) with the tracer written into ``directory``.

    It prints the :data:`MARKER` line with the executed lines.
    """
    plugin = shlex.quote(f"{directory}/{PLUGIN_MODULE}.py")
    result = shlex.quote(f"{directory}/lines.json")
    return (
        f"mkdir -p {shlex.quote(directory)} && cat > {plugin} <<'NESTOR_TRACE_EOF'\n"
        f"{PLUGIN_SOURCE}NESTOR_TRACE_EOF\n"
        f'PYTHONPATH={shlex.quote(directory)}"${{PYTHONPATH:+:$PYTHONPATH}}" NESTOR_TRACE_FILE={result} '
        f"{test_command} -p {PLUGIN_MODULE} > /dev/null 2>&1; cat {result}"
    )


def read_executed_lines(output: str) -> ExecutedLines | None:
    """The executed lines in a traced run's output, or None when it has none (the run failed early)."""
    for line in reversed(output.splitlines()):
        if line.startswith(MARKER):
            try:
                ranges = json.loads(line[len(MARKER) :])
            except ValueError:
                return None
            if not isinstance(ranges, dict):
                return None
            return ExecutedLines(
                {
                    str(path): frozenset(n for start, end in spans for n in range(int(start), int(end) + 1))
                    for path, spans in ranges.items()  # pyright: ignore[reportUnknownVariableType]
                    if isinstance(spans, list)
                }
            )
    return None
