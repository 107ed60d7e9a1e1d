"""Which files a change request allows the harness to touch, read from the request itself.

A user who writes "fix the bug in index.js, not in the tests" or "add a docstring to `f`, change
nothing else" has drawn a line a small model does not see: asked for edit blocks, the 1.5B model
edited the test file. So the line is drawn here, before any edit, and every edit the harness makes
goes through it (:meth:`.workspace.Workspace.run_edits` refuses the rest): the files the request
names, else the files that define the names it writes when it says to change nothing else; test
files only when the request asks for tests (or renames a name they use), never when it says not to;
new files only when the request asks for something new.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from nestor.runtime.features.small.gathering.project import is_test_path

_FILE_NAME = re.compile(
    r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+(?:\.[\w-]+)*\.(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|go|rs|java|kt|rb|c|h|"
    r"cc|cpp|hpp|cs|toml|cfg|ini|json|ya?ml|md|rst|txt|sh|sql|html|css|lock)|Makefile|Dockerfile|LICENSE)"
    r"(?![\w/])"
)
# "not in the tests", "don't touch the test file", "leave tests alone", "without changing tests".
_NOT_TESTS = re.compile(
    r"\b(?:not|never|nor|no|without|don'?t|do\s+not|leave)\b[^.;!?\n]{0,30}?\b(?:tests?|test\s+files?|"
    r"specs?|test\s+suite)\b(?!\.?\w)",
    re.IGNORECASE,
)
_LEAVE_ALONE = re.compile(
    r"\b(?:tests?|test\s+files?|specs?)\b[^.;!?\n]{0,20}\b(?:alone|as\s+they\s+are)\b", re.I
)
# "change nothing else", "only that", "don't change anything else", "nothing more".
_NOTHING_ELSE = re.compile(
    r"\b(?:nothing\s+else|nothing\s+more|only\s+(?:that|this|it)\b|(?:don'?t|do\s+not)\s+(?:change|touch|edit|"
    r"modify)\s+(?:anything|any\s+other)|no\s+other\s+(?:change|file|edit))",
    re.IGNORECASE,
)
# A file named only to be kept out: "not index.test.js", "leave README.md alone", "except x.py".
_EXCLUDING = re.compile(
    r"\b(?:not|never|nor|except|without\s+(?:changing|touching|editing)|(?:don'?t|do\s+not)\s+"
    r"(?:change|touch|edit|modify))\s+(?:in\s+|to\s+|the\s+|any\s+)*$",
    re.IGNORECASE,
)
_ASKS_FOR_TESTS = re.compile(
    r"\b(?:add|write|update|change|fix|extend|create|adjust)\s+(?:a\s+|an\s+|the\s+|new\s+|its\s+|some\s+|"
    r"unit\s+|regression\s+)*tests?\b|\b(?:with|and|plus)\s+(?:a\s+|an\s+|its\s+|the\s+|some\s+)?"
    r"(?:new\s+|unit\s+|regression\s+)?tests?\b|\btests?\s+for\s+(?:it|this|that|the\s+new)\b|\btest\s+(?:file|module)\b",
    re.IGNORECASE,
)
_ASKS_FOR_NEW = re.compile(
    r"\b(?:add|create|write|implement|new|introduce|extract)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class EditScope:
    """The files a change may touch.

    Attributes:
        files: The only files other than tests it may change (project-relative), or None for any.
        test_files: The only test files it may change, or None for any (when :attr:`tests`).
        excluded: Files the request names to be left alone.
        tests: Test files may change at all.
        new_files: New files may be created.
        reason: What in the request drew the line, for the user and the model.

    """

    files: frozenset[str] | None = None
    test_files: frozenset[str] | None = None
    excluded: frozenset[str] = frozenset()
    tests: bool = True
    new_files: bool = True
    reason: str = ""

    def refusal(self, path: str, *, exists: bool) -> str | None:
        """Why ``path`` may not be changed (``exists``: the file is there now), or None when it may."""
        because = f" ({self.reason})" if self.reason else ""
        if path in self.excluded:
            return f"{path}: the request says not to change it"
        test = is_test_path(path)
        if test and not self.tests:
            return f"{path} is a test file, and the request does not allow changing tests{because}"
        allowed = self.test_files if test else self.files
        if allowed is not None and path not in allowed:
            named = ", ".join(sorted(allowed)) or "no file"
            return f"{path}: the request allows changes to {named} only{because}"
        if not exists and not self.new_files:
            return f"{path} does not exist, and the request does not ask for a new file"
        return None

    def allows(self, path: str, *, exists: bool) -> bool:
        """Whether ``path`` may be changed (see :meth:`refusal`)."""
        return self.refusal(path, exists=exists) is None


ANY = EditScope()
"""A scope that allows every file."""


def read_scope(
    prompt: str,
    project_files: Collection[str],
    *,
    fixing: bool,
    renaming: bool = False,
    defines: Callable[[str], Iterable[str]] = lambda _name: (),
    names: Iterable[str] = (),
) -> EditScope:
    """The scope of the change ``prompt`` asks for.

    Named files other than tests are the only ones of their kind that may change; named test
    files the only tests. Tests change only when the request asks for tests or renames a name,
    or when it names no file, says nothing of "nothing else" and fixes nothing; never when it
    says to leave them alone.

    Args:
        prompt: The request.
        project_files: The project's files (relative paths), to resolve the files it names.
        fixing: The request is to fix failing tests or a bug: the tests say what the code must
            do, so they stay as they are unless the request asks to change them.
        renaming: The request renames a name: every file that uses it changes, tests included.
        defines: The files defining a name (for "change nothing else" without a file named).
        names: The names the request writes as code.

    """
    named, excluded = _named_files(prompt, project_files)
    code = {path for path in named if not is_test_path(path)}
    named_tests = named - code
    not_tests = bool(_NOT_TESTS.search(prompt) or _LEAVE_ALONE.search(prompt))
    nothing_else = bool(_NOTHING_ELSE.search(prompt))
    asks_for_tests = bool(_ASKS_FOR_TESTS.search(prompt)) and not not_tests
    narrowed = bool(code) or nothing_else
    tests = not not_tests and (asks_for_tests or renaming or not (fixing or narrowed))
    reasons: list[str] = []
    files: frozenset[str] | None = None
    if code:
        files = frozenset(code)
        reasons.append("it names " + ", ".join(sorted(code)))
    elif nothing_else:
        defining = {path for name in names for path in defines(name) if not is_test_path(path)}
        if defining:
            files = frozenset(defining)
            reasons.append("it says to change nothing else")
    if not_tests:
        reasons.append("it says to leave the tests alone")
    elif fixing and not tests:
        reasons.append("a fix changes the code, not the tests that say what it must do")
    return EditScope(
        files=files,
        # "test_add in tests/test_calc.py fails. Fix it": a test a fix names says where it fails.
        test_files=frozenset(named_tests) if named_tests and tests else None,
        excluded=frozenset(excluded),
        tests=tests,
        new_files=asks_for_tests or bool(_ASKS_FOR_NEW.search(prompt)),
        reason="; ".join(reasons),
    )


def named_files(prompt: str, project_files: Collection[str]) -> set[str]:
    """The project files ``prompt`` names (``index.js``, ``src/pkg/core.py``), but those it keeps out."""
    return _named_files(prompt, project_files)[0]


def _named_files(prompt: str, project_files: Collection[str]) -> tuple[set[str], set[str]]:
    """The project files the prompt names to change, and those it names to leave alone."""
    named: set[str] = set()
    excluded: set[str] = set()
    for match in _FILE_NAME.finditer(prompt):
        path = _resolve(match.group(1), project_files)
        if path is None:
            continue
        clause = re.split(r"[.;!?,\n]|\bbut\b", prompt[: match.start()])[-1]
        (excluded if _EXCLUDING.search(clause) else named).add(path)
    return named - excluded, excluded


def _resolve(name: str, project_files: Collection[str]) -> str | None:
    """The one project file ``name`` means: its path, or the only file with that ending or name."""
    name = name.removeprefix("./")
    if name in project_files:
        return name
    ending = [path for path in project_files if path.endswith("/" + name)]
    if len(ending) == 1:
        return ending[0]
    if "/" not in name:
        same = [path for path in project_files if PurePosixPath(path).name == name]
        # The shallowest one: "README.md" is the top-level README, not a vendored one.
        if same:
            same.sort(key=lambda path: (path.count("/"), path))
            if len(same) == 1 or same[0].count("/") < same[1].count("/"):
                return same[0]
    return None
