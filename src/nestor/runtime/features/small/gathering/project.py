"""Facts about a project that a small model should not have to find: its layout, README, test command.

Read from the files themselves, never guessed: the test command the project documents comes from
the first of a Makefile ``test`` target, ``package.json``'s ``test`` script, pytest's configuration
or a ``tests`` directory of ``test_*.py`` files, ``Cargo.toml`` and ``go.mod``; each fact keeps the
file (and line) it came from, so an answer can cite it. (The command the harness itself runs is
:mod:`..verifying.test_command`'s.)
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.tools.git.runner import run_git

_SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "dist",
        "build",
        ".idea",
        ".vscode",
        "target",
        ".eggs",
    }
)
_TEST_FILE_NAME = re.compile(r"_test\.(?:py|go|rs)$|[._-](?:test|spec)\.[cm]?[jt]sx?$")
_TEST_FOLDERS = frozenset({"tests", "test", "__tests__", "spec", "specs"})
_README_NAMES = ("README.md", "README.rst", "README.txt", "README")
_MAX_LAYOUT_ENTRIES = 40
_MAX_CHILDREN = 8


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact and where it comes from (``path`` or ``path:line``)."""

    text: str
    source: str


@dataclass(frozen=True, slots=True)
class ProjectCard:
    """What a newcomer reads first: the README's opening, the layout and how to run the tests."""

    readme: Fact | None
    layout: str
    test_command: Fact | None
    description: Fact | None

    def render(self) -> str:
        """The card as evidence text."""
        parts: list[str] = []
        if self.description:
            parts.append(f"Description ({self.description.source}): {self.description.text}")
        if self.test_command:
            parts.append(f"Test command: {self.test_command.text}  (from {self.test_command.source})")
        parts.append("Layout (top level; directories end with /):\n" + self.layout)
        if self.readme:
            parts.append(f"{self.readme.source} begins:\n{self.readme.text}")
        return "\n\n".join(parts)


def project_card(reader: ProjectReader, *, readme_lines: int = 20) -> ProjectCard:
    """Read the project's card (see :class:`ProjectCard`)."""
    return ProjectCard(
        readme=_readme(reader, readme_lines),
        layout=layout(reader.root),
        test_command=find_test_command(reader),
        description=_description(reader),
    )


def project_files(root: Path) -> list[str]:
    """The project's files relative to ``root``: git's list when it is a repository, else a walk."""
    done = run_git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    if done is not None and done.ok:
        return sorted(os.fsdecode(name) for name in done.stdout.split(b"\0") if name)
    files: list[str] = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part in _SKIPPED_DIRS or part.startswith(".") for part in relative.parts[:-1]):
            continue
        if path.is_file() and not path.is_symlink():
            files.append(relative.as_posix())
        if len(files) >= 5000:
            break
    return files


def layout(root: Path) -> str:
    """The top-level entries, each directory with its first entries.

    A directory holding a single directory is followed down (``src/`` -> ``src/pkg/``), so a
    ``src`` layout shows the package's modules rather than one line saying ``src/ pkg/``.
    """
    files = [name for name in project_files(root) if name.split("/", 1)[0] not in _SKIPPED_DIRS]
    lines: list[str] = []
    for directory in sorted({name.split("/", 1)[0] for name in files if "/" in name}):
        prefix = directory + "/"
        entries = _entries_under(files, prefix)
        while len(entries) == 1 and entries[0].endswith("/"):
            prefix += entries[0]
            entries = _entries_under(files, prefix)
        more = f", ... ({len(entries)} entries)" if len(entries) > _MAX_CHILDREN else ""
        lines.append(f"{prefix}  " + ", ".join(entries[:_MAX_CHILDREN]) + more)
    lines.extend(sorted(name for name in files if "/" not in name))
    if len(lines) > _MAX_LAYOUT_ENTRIES:
        lines = [*lines[:_MAX_LAYOUT_ENTRIES], f"... and {len(lines) - _MAX_LAYOUT_ENTRIES} more"]
    return "\n".join(lines)


def _entries_under(files: list[str], prefix: str) -> list[str]:
    """The names directly under ``prefix`` (directories end with ``/``), directories first."""
    entries: dict[str, None] = {}
    for name in files:
        if name.startswith(prefix):
            rest = name[len(prefix) :]
            entries.setdefault(rest.split("/", 1)[0] + ("/" if "/" in rest else ""), None)
    return sorted(entries, key=lambda entry: (not entry.endswith("/"), entry))


def find_test_command(reader: ProjectReader) -> Fact | None:
    """How this project runs its tests, from its own files; None when nothing says."""
    makefile = reader.read_text("Makefile")
    if makefile:
        for number, line in enumerate(makefile.splitlines(), 1):
            if re.match(r"^test\s*:", line):
                return Fact("make test", f"Makefile:{number}")
    if (where := npm_test_script(reader)) is not None:
        return Fact("npm test", where)
    if (where := python_tests(reader)) is not None:
        return Fact("python -m pytest", where)
    if reader.read_text("Cargo.toml"):
        return Fact("cargo test", "Cargo.toml")
    if reader.read_text("go.mod"):
        return Fact("go test ./...", "go.mod")
    return None


def npm_test_script(reader: ProjectReader) -> str | None:
    """Where ``package.json`` has a ``test`` script that runs something (npm's placeholder only fails)."""
    package = reader.read_text("package.json")
    if not package:
        return None
    try:
        scripts = json.loads(package).get("scripts", {})
    except (ValueError, AttributeError):
        return None
    script = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(script, str) or not script.strip() or "no test specified" in script:
        return None
    number = package[: max(0, package.find('"test"'))].count("\n") + 1
    return f"package.json:{number}"


def python_tests(reader: ProjectReader) -> str | None:
    """Where the project says its Python tests are (a pytest config, or a folder of test files)."""
    for name, marker in (
        ("pytest.ini", "[pytest]"),
        ("pyproject.toml", "[tool.pytest"),
        ("setup.cfg", "[tool:pytest]"),
        ("tox.ini", "[pytest]"),
    ):
        text = reader.read_text(name)
        if text and marker in text:
            number = text[: text.index(marker)].count("\n") + 1
            return f"{name}:{number}"
    for directory in ("tests", "test"):
        folder = reader.root.joinpath(directory)
        if (
            any(folder.glob("test_*.py"))
            or any(folder.glob("*_test.py"))
            or (folder / "conftest.py").is_file()
        ):
            return f"{directory}/"
    return None


def is_test_path(path: str) -> bool:
    """Whether ``path`` is a test file by the usual conventions of its language.

    ``test_*.py``, ``*_test.py``, ``*_test.go``, ``*.test.js``, ``*.spec.ts``, and anything in a
    ``tests/``, ``test/``, ``__tests__/`` or ``spec/`` folder.
    """
    pure = PurePosixPath(path)
    return (
        pure.name.startswith("test_")
        or _TEST_FILE_NAME.search(pure.name) is not None
        or any(part in _TEST_FOLDERS for part in pure.parts[:-1])
    )


def user_python() -> str:
    """The Python of the user's environment: ``python`` on PATH, else ``python3``."""
    return "python" if shutil.which("python") else "python3"


def _readme(reader: ProjectReader, max_lines: int) -> Fact | None:
    for name in _README_NAMES:
        text = reader.read_text(name)
        if text:
            lines = [
                line
                for line in text.splitlines()
                if not line.strip().startswith(("[![", "<img", "![", ".. image"))
            ]
            head = "\n".join(lines[:max_lines]).strip()
            return Fact(head[:1500], name)
    return None


def _description(reader: ProjectReader) -> Fact | None:
    for name in ("pyproject.toml", "setup.cfg", "package.json", "Cargo.toml"):
        text = reader.read_text(name)
        if not text:
            continue
        match = re.search(r'^\s*"?description"?\s*[=:]\s*"?([^"\n]+)"?', text, re.MULTILINE)
        if match:
            number = text[: match.start()].count("\n") + 1
            return Fact(match.group(1).strip().rstrip(","), f"{name}:{number}")
    return None
