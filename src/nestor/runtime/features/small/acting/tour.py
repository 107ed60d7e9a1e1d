"""The facts of a tour, written by nestor: the project's layout and how to run its tests.

Asked for a tour, the 1.5B model wrote a layout the project does not have and a test command
nobody configured (``python -m unittest discover`` for a pytest project), with the true ones in
front of it. So the model now writes only what it does well, a sentence or two on what the
project is, from its README; the layout and the test command are read from the files and
written here, each directory with what it holds (a package with its modules and the first line
of their docstrings, the tests, the docs) and the command with the file that says so.
:func:`tour` is the harness's step for a tour request: the model's summary, then these facts.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import PurePosixPath

from nestor.runtime.features.small.acting import prompts
from nestor.runtime.features.small.gathering.functions import parsed
from nestor.runtime.features.small.gathering.languages import language_of
from nestor.runtime.features.small.gathering.project import find_test_command, project_card, project_files
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.workspace import Workspace

TOUR_SUMMARY_MAX_TOKENS = 120
MAX_DIRECTORIES = 10
MAX_NAMES = 8
MAX_DESCRIBED_MODULES = 4
_TEST_DIRS = frozenset({"tests", "test", "testing", "spec", "specs"})
_DIRECTORY_ROLES = {
    "docs": "documentation",
    "doc": "documentation",
    "documentation": "documentation",
    "examples": "examples",
    "example": "examples",
    "scripts": "scripts",
    "tools": "tools",
    "bin": "scripts",
    "bench": "benchmarks",
    "benchmarks": "benchmarks",
}
_TOP_FILES = (
    "README.md",
    "README.rst",
    "README.txt",
    "README",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "package.json",
    "Cargo.toml",
    "go.mod",
    "Makefile",
    "tox.ini",
    "noxfile.py",
    "pytest.ini",
)


async def tour(work: Workspace, prompt: str) -> str | None:
    """Answer a tour request: what the project is, in the model's words, then the facts nestor read."""
    # The README and layout are read here; listing the root makes the look visible as a call.
    await work.host.run_tools([("ls", {"path": "."})])
    card = project_card(work.reader)
    about = "\n\n".join(
        f"{fact.source}:\n{fact.text}" for fact in (card.description, card.readme) if fact is not None
    )
    summary = await work.host.ask(
        prompts.TOUR,
        f"<project>\n{about or 'The project has no README and no description.'}\n</project>\n\n"
        f"Request: {prompt}",
        max_tokens=TOUR_SUMMARY_MAX_TOKENS,
    )
    if summary is None:
        return None
    return f"{summary.strip()}\n\n{tour_facts(work.reader)}"


def tour_facts(reader: ProjectReader) -> str:
    """The layout and the test command, as Markdown sections for the tour's answer."""
    files = [path for path in project_files(reader.root) if not path.startswith(".")]
    sections = ["**Layout**\n" + "\n".join(_layout_lines(reader, files))]
    command = find_test_command(reader)
    if command is not None:
        file, _, line = command.source.partition(":")
        where = f"`{file}`, line {line}" if line else f"`{file}`"
        tests = f"Run them with `{command.text}` (configured in {where})."
        directories = _test_directories(files)
        if directories:
            tests = "The tests are in " + _listed(f"`{d}/`" for d in directories) + ". " + tests
        sections.append("**Tests**\n" + tests)
    else:
        sections.append("**Tests**\nNo file of the project says how to run its tests.")
    return "\n\n".join(sections)


def _layout_lines(reader: ProjectReader, files: list[str]) -> list[str]:
    lines: list[str] = []
    for directory in _directories(files)[:MAX_DIRECTORIES]:
        lines.append(f"- `{directory}/`: {_what_it_holds(reader, directory, files)}")
    top = [name for name in files if "/" not in name and language_of(name)]  # the code, when it is there
    top += [name for name in _TOP_FILES if name in files]
    if top:
        lines.append("- at the top: " + ", ".join(f"`{name}`" for name in top[: MAX_NAMES + 4]))
    return lines


def _directories(files: list[str]) -> list[str]:
    """The top-level directories, each followed down while it holds one directory alone (``src/pkg``)."""
    found: list[str] = []
    for top in sorted({path.split("/", 1)[0] for path in files if "/" in path}):
        directory = top
        while True:
            children = _children(files, directory)
            if len(children) == 1 and children[0].endswith("/"):
                directory += "/" + children[0].rstrip("/")
                continue
            break
        found.append(directory)
    # Code first (the biggest package first), then tests, then the rest, as a newcomer reads them.
    return sorted(
        found,
        key=lambda d: (
            _role(files, d) != "package",
            _role(files, d) != "tests",
            -sum(path.startswith(d + "/") and path.endswith(".py") for path in files),
            d,
        ),
    )


def _children(files: list[str], directory: str) -> list[str]:
    prefix = directory + "/"
    names: dict[str, None] = {}
    for path in files:
        if path.startswith(prefix):
            rest = path[len(prefix) :]
            names.setdefault(rest.split("/", 1)[0] + ("/" if "/" in rest else ""), None)
    return sorted(names, key=lambda name: (not name.endswith("/"), name))


def _role(files: list[str], directory: str) -> str:
    name = PurePosixPath(directory).name
    if _TEST_DIRS & set(PurePosixPath(directory).parts):
        return "tests"
    if f"{directory}/__init__.py" in files:
        return "package"
    return _DIRECTORY_ROLES.get(name, "other")


def _what_it_holds(reader: ProjectReader, directory: str, files: list[str]) -> str:
    children = _children(files, directory)
    role = _role(files, directory)
    # A package's __init__.py is worth naming when the package's code is in it.
    names = [
        name for name in children if name != "__init__.py" or _code_lines(reader, f"{directory}/{name}") > 30
    ]
    if role == "package":  # its biggest modules first, then its subpackages
        names.sort(key=lambda name: (name.endswith("/"), -_code_lines(reader, f"{directory}/{name}")))
    shown = ", ".join(f"`{name}`" for name in names[:MAX_NAMES])
    more = f" and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else ""
    if role == "tests":
        return f"the tests ({shown}{more})"
    if role == "package":
        package = directory.rsplit("/", 1)[-1]
        described = _described_modules(reader, directory, names)
        listing = f"the `{package}` package's code ({shown}{more})"
        return listing + ("; " + "; ".join(described) if described else "")
    if role != "other":
        return f"{_DIRECTORY_ROLES[PurePosixPath(directory).name]} ({shown}{more})"
    return shown + more


def _described_modules(reader: ProjectReader, directory: str, names: list[str]) -> list[str]:
    """``module.py``: the first sentence of its docstring, for the biggest modules that have one."""
    modules = sorted(
        (name for name in names if name.endswith(".py") and not name.startswith("__")),
        key=lambda name: -_code_lines(reader, f"{directory}/{name}"),
    )
    described: list[str] = []
    for name in modules:
        docstring = ast.get_docstring(parsed(reader.read_text(f"{directory}/{name}") or "")) or ""
        first = re.split(r"(?<=\.)\s|\n\s*\n", docstring.strip(), maxsplit=1)[0]
        if first and len(first) <= 120:
            described.append(f"`{name}`: {' '.join(first.split()).rstrip('.')}")
        if len(described) >= MAX_DESCRIBED_MODULES:
            break
    return described


def _code_lines(reader: ProjectReader, path: str) -> int:
    return (reader.read_text(path) or "").count("\n")


def _test_directories(files: list[str]) -> list[str]:
    """The outermost directories named like tests that hold test files.

    A vendored project's tests deeper down are not the project's own.
    """
    found: set[PurePosixPath] = set()
    for path in files:
        pure = PurePosixPath(path)
        if not (pure.name.startswith("test_") or pure.stem.endswith(("_test", ".test", ".spec"))):
            continue
        parents = [parent for parent in reversed(pure.parents) if parent.name in _TEST_DIRS]
        if parents:
            found.add(parents[0])
    if not found:
        # Tests named like any other file (test/parse.js): a top-level test folder holds them.
        found = {PurePosixPath(path).parents[-2] for path in files if path.split("/", 1)[0] in _TEST_DIRS}
    if not found:
        return []
    depth = min(len(directory.parts) for directory in found)
    return sorted(d.as_posix() for d in found if len(d.parts) <= depth + 1)[:3]


def _listed(items: Iterable[str]) -> str:
    names = list(items)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
