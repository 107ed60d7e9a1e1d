"""Answering questions about the git history and the current diff, from git's own record.

nestor reads the log (the last commits, each with its files), the patches of the last few
commits and the uncommitted diff with its own git (:func:`nestor.tools.git.runner.run_git_async`:
no repository config, hook or filter runs), and the answer step sees them as its evidence. Each
hunk's header names the function it is in, which answers "in which function". Under the model's
answer nestor lists what git says of it: each commit it cites (by hash or by message) with its
hash, message, date and author, and the lines a short commit or uncommitted diff changes, placed in
their function by the code index.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from nestor.runtime.features.small.acting import prompts
from nestor.runtime.features.small.gathering.code_index import CodeIndex, code_index
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.workspace import Workspace
from nestor.tools.git.runner import run_git_async

LOG_COMMITS = 15
PATCH_COMMITS = 4
MAX_PATCH_CHARS = 2500
MAX_DIFF_CHARS = 2500
HISTORY_MAX_TOKENS = 240
MAX_LISTED_LINES = 8
"""A diff (uncommitted, or a cited commit's) of at most this many changed lines is listed under the answer."""
_LOG_LINE = re.compile(r"^([0-9a-f]{7,40}) (\d{4}-\d{2}-\d{2}) ([^:\n]+): (.+)$", re.MULTILINE)
_HUNK_HEAD = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_PATCH_HEAD = re.compile(r"^commit ([0-9a-f]{7,40}): .*$", re.MULTILINE)


async def history_answer(work: Workspace, prompt: str) -> str | None:
    """Answer ``prompt`` from the log, the last commits' patches and the uncommitted diff."""
    root = work.reader.root
    log = await _git(root, "log", f"-n{LOG_COMMITS}", "--date=short", "--format=%h %ad %an: %s", "--stat=100")
    if log is None:
        return "This project is not a git repository (or git is not available), so it has no history to read."
    patches = await _git(
        root, "log", f"-n{PATCH_COMMITS}", "--format=commit %h: %s", "-p", "--no-color", "-U2"
    )
    diff = await _git(root, "diff", "HEAD", "--no-color", "-U2")
    untracked = await _git(root, "ls-files", "--others", "--exclude-standard")
    parts = [f"<git-log>\n{log.strip() or '(no commits)'}\n</git-log>"]
    if patches:
        parts.append(f"<last-commits>\n{_cut(patches, MAX_PATCH_CHARS)}\n</last-commits>")
    changes = (diff or "").strip()
    if untracked and untracked.strip():
        changes += "\nNew files not yet added: " + ", ".join(untracked.split())
    parts.append(
        f"<uncommitted-changes>\n{_cut(changes, MAX_DIFF_CHARS) or '(none)'}\n</uncommitted-changes>"
    )
    reply = await work.host.ask(
        prompts.HISTORY, "\n\n".join(parts) + f"\n\nQuestion: {prompt}", max_tokens=HISTORY_MAX_TOKENS
    )
    if reply is None:
        return None
    # What git says follows the model's words: the commits it cites, the lines they and the diff change.
    function_of = function_finder(work.reader)
    facts = [
        commits_cited(reply, log, patches or "", function_of),
        lines_changed(diff or "", "Not committed yet", function_of),
    ]
    return "\n\n".join([reply.strip(), *(fact for fact in facts if fact)])


def commits_cited(
    answer: str, log: str, patches: str, function_of: Callable[[Hunk], str] | None = None
) -> str:
    """Each commit the answer names (by its hash or its message), from git's record.

    Args:
        answer: The model's answer.
        log: ``git log --format='%h %ad %an: %s'`` output (other lines are skipped).
        patches: ``git log --format='commit %h: %s' -p`` output of the last commits.
        function_of: The function a hunk changes, if known.

    Returns:
        One line per cited commit: its hash, message, date and author, and the lines it changed
        when they are few; empty when the answer cites none.

    """
    changes = _patches_by_commit(patches)
    rows: list[str] = []
    for match in _LOG_LINE.finditer(log):
        short, date, author, message = match.groups()
        if not (re.search(rf"\b{short[:7]}", answer) or message.lower() in answer.lower()):
            continue
        changed = lines_changed(changes.get(short, ""), "", function_of)
        rows.append(f'- `{short}` "{message}" ({date}, {author})' + (f": {changed}" if changed else ""))
    return "Commits cited:\n" + "\n".join(rows) if rows else ""


def lines_changed(diff: str, label: str, function_of: Callable[[Hunk], str] | None = None) -> str:
    """A short diff as its changed lines: each hunk's removed then added lines, with its function.

    Args:
        diff: Unified diff text (``git diff`` or ``git log -p``).
        label: Put before the lines, if not empty.
        function_of: The function a hunk changes, if known.

    Returns:
        ``label: path (in function): old becomes new.``, or empty for an empty diff or one of
        more than :data:`MAX_LISTED_LINES` changed lines.

    """
    hunks = _hunks(diff)
    if not hunks or sum(len(hunk.old) + len(hunk.new) for hunk in hunks) > MAX_LISTED_LINES:
        return ""
    rows: list[str] = []
    for hunk in hunks:
        function = function_of(hunk) if function_of else ""
        where = f" (in `{function}`)" if function else ""
        before = "; ".join(f"`{line}`" for line in hunk.old) or "nothing"
        after = "; ".join(f"`{line}`" for line in hunk.new) or "nothing"
        rows.append(f"{hunk.path}{where}: {before} becomes {after}")
    text = ". ".join(rows) + "."
    return f"{label}: {text}" if label else text


@dataclass
class Hunk:
    """One hunk of a unified diff.

    Attributes:
        path: The file, as the diff names it (``b/`` taken off).
        line: The line of the new file the next added or context line is.
        old: Its removed lines, stripped (blank ones left out).
        new: Its added lines, stripped (blank ones left out).
        first_added: The new file's line number and text of its first added line.

    """

    path: str
    line: int
    old: list[str] = field(default_factory=list[str])
    new: list[str] = field(default_factory=list[str])
    first_added: tuple[int, str] | None = None


def _hunks(diff: str) -> list[Hunk]:
    """A unified diff's hunks that change something, with their removed and added lines."""
    hunks: list[Hunk] = []
    path = ""
    current: Hunk | None = None
    for line in diff.splitlines():
        start = _HUNK_HEAD.match(line)
        if current is None and line.startswith("+++ "):
            path = line.removeprefix("+++ ").removeprefix("b/")
        elif start:
            current = Hunk(path, int(start.group(1)))
            hunks.append(current)
        elif current is not None and line.startswith("-"):
            current.old += [line[1:].strip()] if line[1:].strip() else []
        elif current is not None and line.startswith("+"):
            if line[1:].strip():
                current.new.append(line[1:].strip())
                current.first_added = current.first_added or (current.line, line[1:])
            current.line += 1
        elif current is not None and (not line or line.startswith(" ")):
            current.line += 1
        elif current is not None and not line.startswith("\\"):
            current = None  # the next file's or commit's header
    return [hunk for hunk in hunks if hunk.old or hunk.new]


def function_finder(reader: ProjectReader) -> Callable[[Hunk], str]:
    """Find the function a hunk changes, from the code index of the project as it is now.

    git's own hunk header names the last line before the hunk that looks like a definition: the
    function before the one changed when the change is near its top. A hunk is placed only when
    the project's file still has its first added line where the diff puts it.
    """
    index: list[CodeIndex] = []

    def function_of(hunk: Hunk) -> str:
        if hunk.first_added is None:
            return ""
        number, text = hunk.first_added
        lines = (reader.read_text(hunk.path) or "").splitlines()
        if not 0 < number <= len(lines) or lines[number - 1] != text:
            return ""
        index[:] = index or [code_index(reader)]
        function = index[0].enclosing(hunk.path, number)
        return function.qualified if function else ""

    return function_of


def _patches_by_commit(patches: str) -> dict[str, str]:
    """``git log -p`` output split at its ``commit <hash>: <message>`` lines, keyed by hash."""
    found: dict[str, str] = {}
    heads = list(_PATCH_HEAD.finditer(patches))
    for head, after in zip(heads, [*heads[1:], None], strict=True):
        found[head.group(1)] = patches[head.end() : after.start() if after else len(patches)]
    return found


async def _git(root: Path, *args: str) -> str | None:
    done = await run_git_async(root, *args)
    if done is None or done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", errors="replace")


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "\n... (cut)"
