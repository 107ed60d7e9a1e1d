r"""Eval tasks: what to ask, in which repository, and how to check the outcome automatically.

A task file ``evals/tasks/NAME.toml`` holds ``[[task]]`` tables::

    [[task]]
    id = "itsdangerous-default-digest"      # unique across all files
    repo = "itsdangerous"                    # a directory under evals/repos/
    kind = "lookup"                          # one of KINDS
    prompt = "Which hash function does ...?"
    timeout_s = 600                          # optional
    blind = true                             # optional: written before any harness ran on it
    followups = ["And which ...?"]           # optional: asked after the prompt, in the same
                                             # session (nestor: the batch job's next prompt); the last
                                             # answer counts

    [[task.setup]]                           # optional: changes made to the copy before the run
    file = "src/itsdangerous/signer.py"      # (a bug to fix, a failing test to make pass)
    old = "return a == b"
    new = "return a != b"

    [[task.history]]                         # optional: commits made after the baseline, in order
    message = "Fix the digest"               # (for questions about the git history)
    [[task.history.edits]]                   # same shape as setup
    file = "..."
    old = "..."
    new = "..."

    [[task.uncommitted]]                     # optional: edits left in the work tree, not committed
    file = "..."                             # (for questions about the current diff)
    old = "..."
    new = "..."

    [task.check]                             # every given check must hold
    answer_all = ['(?i)\\bsha-?1\\b']        # regexes that must all match the final answer
    answer_none = ['(?i)sha-?256']           # regexes none of which may match it
    test_command = "{python} -m pytest -q tests/test_signer.py"   # must exit 0 afterwards
    unchanged = ["tests/**"]                 # globs of files that must stay byte-identical
    changed = ["src/itsdangerous/signer.py"] # globs: a file matching each must have changed
    files_all = { "src/**/*.py" = ['\\bnew_name\\b'] }    # each regex found in some matching file
    files_none = { "**/*.py" = ['\\bold_name\\b'] }       # no matching file contains the regex
    allowed = ["src/itsdangerous/signer.py"]  # globs: no file outside them may change (an edit
                                             # task must say which files its request allows)

    [task.reference]                         # a known-good outcome, to test the checks themselves
    answer = "The default digest is SHA-1 (hashlib.sha1), see signer.py:42."
    wrong = "It is SHA-256."                     # optional: a plausible wrong answer the check rejects
    [[task.reference.edits]]                 # same shape as setup
    file = "..."
    old = "..."
    new = "..."

``{python}`` in a test command is the Python running the eval, which has pytest.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS = (
    "locate",  # where is X defined
    "lookup",  # a fact: a default value, an exception raised, a constant
    "explain",  # what a function does
    "tour",  # what the repository is, its layout, how to run its tests
    "fix",  # make a failing test pass
    "rename",  # rename a symbol across files
    "feature",  # add a small feature with its test
    "multi",  # a question in several parts
    "delegate",  # a question to hand to the explore agent
    "callers",  # which functions call X, where X is used
    "list",  # list every place that ...
    "predict",  # what a call returns
    "error",  # explain an error or a traceback, and the line that raises it
    "followup",  # a question, then a follow-up in the same session
    "covers",  # which test covers X
    "history",  # the git history or the current diff
    "docs",  # documentation and comment edits (a docstring, a comment), nothing else
    "refactor",  # small refactors: extract a function, add a parameter with its callers
    "config",  # configuration and README edits
    "refuse",  # requests that must be refused or answered "I could not", touching nothing
    "tests",  # tests asked for of code that exists: they must catch the bug they are about
)
QUESTION_KINDS = frozenset(
    {
        "locate",
        "lookup",
        "explain",
        "tour",
        "multi",
        "delegate",
        "callers",
        "list",
        "predict",
        "error",
        "followup",
        "covers",
        "history",
        "refuse",
    }
)

EVALS_DIR = Path(__file__).resolve().parent
TASKS_DIR = EVALS_DIR / "tasks"
REPOS_DIR = EVALS_DIR / "repos"


class TaskFileError(ValueError):
    """A task file that cannot be used: names the file, the task and the key."""


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the single occurrence of ``old`` in ``file`` (relative to the repository) by ``new``."""

    file: str
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class Check:
    """How a task's outcome is judged; every check given must hold (see the module docstring)."""

    answer_all: tuple[str, ...] = ()
    answer_none: tuple[str, ...] = ()
    test_command: str | None = None
    unchanged: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    files_all: dict[str, tuple[str, ...]] = field(default_factory=dict[str, tuple[str, ...]])
    files_none: dict[str, tuple[str, ...]] = field(default_factory=dict[str, tuple[str, ...]])
    allowed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Commit:
    """A commit made on top of the baseline: its message and its edits (see the module docstring)."""

    message: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True, slots=True)
class Reference:
    """A known-good outcome: an answer and edits that pass the task's check."""

    answer: str = ""
    edits: tuple[Edit, ...] = ()
    wrong: str = ""


@dataclass(frozen=True, slots=True)
class Task:
    """One eval task."""

    id: str
    repo: str
    kind: str
    prompt: str
    check: Check
    setup: tuple[Edit, ...] = ()
    reference: Reference = field(default_factory=Reference)
    timeout_s: float = 600.0
    source: Path | None = None
    blind: bool = False
    followups: tuple[str, ...] = ()
    history: tuple[Commit, ...] = ()
    uncommitted: tuple[Edit, ...] = ()

    @property
    def prompts(self) -> tuple[str, ...]:
        """The prompt, then each follow-up, in the order they are asked."""
        return (self.prompt, *self.followups)

    @property
    def is_question(self) -> bool:
        """True for tasks that ask a question (nothing may change), False for tasks that edit."""
        return self.kind in QUESTION_KINDS


def load_tasks(tasks_dir: Path = TASKS_DIR, repos_dir: Path = REPOS_DIR) -> list[Task]:
    """Every task of ``tasks_dir/*.toml``, in file then declaration order.

    Raises:
        TaskFileError: A file is not valid TOML, a key is missing or unknown, an id repeats, or a
            task names a repository that ``repos_dir`` does not have.

    """
    tasks: list[Task] = []
    seen: set[str] = set()
    for path in sorted(tasks_dir.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise TaskFileError(f"{path}: {exc}") from None
        for raw in data.get("task", []):
            task = _task(path, raw)
            if task.id in seen:
                raise TaskFileError(f"{path}: task id {task.id!r} is used twice")
            if not (repos_dir / task.repo).is_dir():
                raise TaskFileError(f"{path}: task {task.id!r}: no repository {repos_dir / task.repo}")
            seen.add(task.id)
            tasks.append(task)
    return tasks


_TASK_KEYS = {
    "id",
    "repo",
    "kind",
    "prompt",
    "check",
    "setup",
    "reference",
    "timeout_s",
    "blind",
    "followups",
    "history",
    "uncommitted",
}
_CHECK_KEYS = {
    "answer_all",
    "answer_none",
    "test_command",
    "unchanged",
    "changed",
    "files_all",
    "files_none",
    "allowed",
}


def _task(path: Path, raw: dict[str, Any]) -> Task:
    name = raw.get("id", "?")

    def fail(message: str) -> TaskFileError:
        return TaskFileError(f"{path}: task {name!r}: {message}")

    if unknown := set(raw) - _TASK_KEYS:
        raise fail(f"unknown keys {sorted(unknown)}")
    for key in ("id", "repo", "kind", "prompt", "check"):
        if key not in raw:
            raise fail(f"missing key {key!r}")
    if raw["kind"] not in KINDS:
        raise fail(f"kind {raw['kind']!r} is not one of {', '.join(KINDS)}")
    if raw["kind"] not in QUESTION_KINDS and "allowed" not in raw["check"]:
        raise fail("an edit task needs check.allowed: the files its request allows to change")
    check_raw: dict[str, Any] = raw["check"]
    if unknown := set(check_raw) - _CHECK_KEYS:
        raise fail(f"unknown check keys {sorted(unknown)}")
    check = Check(
        answer_all=tuple(check_raw.get("answer_all", ())),
        answer_none=tuple(check_raw.get("answer_none", ())),
        test_command=check_raw.get("test_command"),
        unchanged=tuple(check_raw.get("unchanged", ())),
        changed=tuple(check_raw.get("changed", ())),
        files_all={glob: tuple(patterns) for glob, patterns in check_raw.get("files_all", {}).items()},
        files_none={glob: tuple(patterns) for glob, patterns in check_raw.get("files_none", {}).items()},
        allowed=tuple(check_raw.get("allowed", ())),
    )
    reference_raw: dict[str, Any] = raw.get("reference", {})
    return Task(
        id=str(raw["id"]),
        repo=str(raw["repo"]),
        kind=str(raw["kind"]),
        prompt=str(raw["prompt"]).strip(),
        check=check,
        setup=tuple(_edits(fail, raw.get("setup", []))),
        reference=Reference(
            answer=str(reference_raw.get("answer", "")),
            edits=tuple(_edits(fail, reference_raw.get("edits", []))),
            wrong=str(reference_raw.get("wrong", "")),
        ),
        timeout_s=float(raw.get("timeout_s", 600.0)),
        source=path,
        blind=bool(raw.get("blind", False)),
        followups=tuple(str(text).strip() for text in raw.get("followups", ())),
        history=tuple(
            Commit(message=str(commit.get("message", "")), edits=tuple(_edits(fail, commit.get("edits", []))))
            for commit in raw.get("history", [])
        ),
        uncommitted=tuple(_edits(fail, raw.get("uncommitted", []))),
    )


def _edits(fail: Any, raw: list[dict[str, Any]]) -> list[Edit]:
    edits: list[Edit] = []
    for item in raw:
        if set(item) != {"file", "old", "new"}:
            raise fail(f"an edit needs exactly file, old and new, not {sorted(item)}")
        edits.append(Edit(file=str(item["file"]), old=str(item["old"]), new=str(item["new"])))
    return edits


def apply_edits(root: Path, edits: tuple[Edit, ...] | list[Edit]) -> None:
    """Apply ``edits`` to the files under ``root``.

    Raises:
        TaskFileError: An edit's ``old`` text is missing from its file or not unique.

    """
    for edit in edits:
        path = root / edit.file
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if edit.old == "":
            if text:
                raise TaskFileError(f"{edit.file}: an edit with empty old text needs a new file")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(edit.new, encoding="utf-8")
            continue
        count = text.count(edit.old)
        if count != 1:
            raise TaskFileError(
                f"{edit.file}: the old text occurs {count} times, not once: {edit.old[:60]!r}"
            )
        path.write_text(text.replace(edit.old, edit.new), encoding="utf-8")
