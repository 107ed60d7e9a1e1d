"""Judging a task's outcome: the final answer and the workspace against the task's check.

The semantics of each check are those of the :mod:`evals.tasks` docstring. Files are compared with
the workspace's baseline commit (see :mod:`evals.workspace`), tracked changes and new files alike,
so a harness that commits its work is judged on it all the same. Files that test runs and agents
leave behind (:data:`IGNORED_DROPPINGS`) do not count as changes and are never searched.
"""

from __future__ import annotations

import functools
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from evals.processes import run_in_group
from evals.tasks import Task, apply_edits
from evals.workspace import baseline_commit, git

TEST_TIMEOUT_S = 300.0
"""Longest a task's test command may run."""

IGNORED_DROPPINGS: tuple[str, ...] = (
    "**/__pycache__/**",
    "**/*.pyc",
    "**/.pytest_cache/**",
    ".aider*",
    ".aider*/**",
    ".nestor/**",
)
"""Globs of caches and harness state files, which neither count as changes nor get searched."""

_FAILURE_TAIL_LINES = 3
_FAILURE_MAX_CHARS = 300
_LISTED_FILES = 5


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """Whether a task was solved, and why not.

    Attributes:
        solved: True when every check of the task held.
        failures: One short human line per check that failed, in the order checked.

    """

    solved: bool
    failures: tuple[str, ...]


def check_outcome(
    task: Task, workspace: Path, answer: str, *, test_timeout_s: float = TEST_TIMEOUT_S
) -> CheckOutcome:
    """Judge ``answer`` and the state of ``workspace`` against ``task.check``.

    A question task (``task.is_question``) must also leave every file as it was. The test
    command runs last, after the files were compared, so what it writes cannot count as a change.

    Args:
        task: The task, with its check.
        workspace: The task's workspace, as the harness left it.
        answer: The harness's final answer.
        test_timeout_s: Longest the test command may run before it counts as failed.

    Returns:
        The outcome: solved, or the failures.

    """
    check = task.check
    failures: list[str] = []
    failures += [
        f"answer lacks /{pattern}/" for pattern in check.answer_all if not re.search(pattern, answer)
    ]
    failures += [f"answer matches /{pattern}/" for pattern in check.answer_none if re.search(pattern, answer)]

    changed = changed_files(workspace)
    relevant_changes = sorted(path for path in changed if not _is_dropping(path))
    if task.is_question and relevant_changes:
        failures.append(f"changed {_list(relevant_changes)}, but a question must change nothing")
    for glob in check.unchanged:
        if touched := [path for path in relevant_changes if glob_matches(glob, path)]:
            failures.append(f"changed {_list(touched)}, which must stay unchanged")
    failures += [
        f"no file matching {glob} changed"
        for glob in check.changed
        if not any(glob_matches(glob, path) for path in changed)
    ]
    if check.allowed and (
        outside := [
            path for path in relevant_changes if not any(glob_matches(g, path) for g in check.allowed)
        ]
    ):
        failures.append(f"changed {_list(outside)}, outside what the request allows")

    if check.files_all or check.files_none:
        files = _current_files(workspace)
        for glob, patterns in check.files_all.items():
            texts = [_read(workspace / path) for path in files if glob_matches(glob, path)]
            failures += [
                f"no file matching {glob} contains /{pattern}/"
                for pattern in patterns
                if not any(re.search(pattern, text) for text in texts)
            ]
        for glob, patterns in check.files_none.items():
            for pattern in patterns:
                if offenders := [
                    path
                    for path in files
                    if glob_matches(glob, path) and re.search(pattern, _read(workspace / path))
                ]:
                    failures.append(f"/{pattern}/ is in {_list(offenders)}")

    if check.test_command is not None and (
        failure := _run_tests(check.test_command, workspace, test_timeout_s)
    ):
        failures.append(failure)
    return CheckOutcome(solved=not failures, failures=tuple(failures))


def apply_reference(task: Task, workspace: Path) -> str:
    """Apply the task's reference edits to ``workspace`` and return its reference answer.

    Used by the suite's self-test: the reference outcome must pass the task's check.
    """
    apply_edits(workspace, task.reference.edits)
    return task.reference.answer


def changed_files(workspace: Path) -> set[str]:
    """Files (relative, ``/``-separated) that differ from the baseline commit: changed, added, deleted.

    Committed and uncommitted changes both count, and so do new files git does not ignore.
    """
    tracked = git(
        workspace, "diff", "--name-only", "--no-renames", "--no-ext-diff", "-z", baseline_commit(workspace)
    )
    untracked = git(workspace, "ls-files", "--others", "--exclude-standard", "-z")
    return {name for name in (tracked + untracked).split("\0") if name}


def glob_matches(glob: str, path: str) -> bool:
    """Whether ``path`` (relative, ``/``-separated) matches ``glob``.

    ``*`` and ``?`` stay within one path segment, ``**`` spans any number of them (none
    included: ``src/**/*.py`` matches ``src/a.py``), and ``[...]`` is a character class.
    """
    return _glob_regex(glob).fullmatch(path) is not None


@functools.lru_cache(maxsize=256)
def _glob_regex(glob: str) -> re.Pattern[str]:
    parts: list[str] = []
    index = 0
    while index < len(glob):
        if glob.startswith("**/", index):
            parts.append("(?:.*/)?")
            index += 3
        elif glob.startswith("**", index):
            parts.append(".*")
            index += 2
        elif glob[index] == "*":
            parts.append("[^/]*")
            index += 1
        elif glob[index] == "?":
            parts.append("[^/]")
            index += 1
        elif glob[index] == "[" and (end := glob.find("]", index + 2)) != -1:
            body = glob[index + 1 : end]
            parts.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            index = end + 1
        else:
            parts.append(re.escape(glob[index]))
            index += 1
    return re.compile("".join(parts))


def _is_dropping(path: str) -> bool:
    return any(glob_matches(glob, path) for glob in IGNORED_DROPPINGS)


def _current_files(workspace: Path) -> list[str]:
    """The workspace's files now: tracked or new, not ignored by git, not droppings."""
    listed = git(workspace, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    names = {name for name in listed.split("\0") if name}
    return sorted(name for name in names if not _is_dropping(name) and (workspace / name).is_file())


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _list(paths: list[str]) -> str:
    shown = ", ".join(paths[:_LISTED_FILES])
    return shown if len(paths) <= _LISTED_FILES else f"{shown} and {len(paths) - _LISTED_FILES} more"


def _run_tests(command: str, workspace: Path, timeout_s: float) -> str | None:
    """Run the task's test command; return a failure line, or None when it passed."""
    line = command.replace("{python}", shlex.quote(sys.executable))
    finished = run_in_group(line, cwd=workspace, timeout_s=timeout_s)
    # stdout last: test runners print their verdict there, and warnings on stderr would bury it.
    output = (finished.stderr + "\n" + finished.stdout).strip()
    if finished.timed_out:
        return f"tests timed out after {timeout_s:g} s: {_tail(output)}"
    if finished.returncode != 0:
        return f"tests failed (exit {finished.returncode}): {_tail(output)}"
    return None


def _tail(output: str) -> str:
    """The last few non-empty lines of ``output``, on one line, cut to a readable length."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    tail = " | ".join(lines[-_FAILURE_TAIL_LINES:]) or "(no output)"
    return tail if len(tail) <= _FAILURE_MAX_CHARS else "..." + tail[-_FAILURE_MAX_CHARS:]
