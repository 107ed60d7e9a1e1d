"""Renaming: every whole-word occurrence of a name in the project's files, then the tests.

A rename needs no model: nestor finds the name with ``grep`` and edits each line it is on.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from nestor.runtime.features.small.gathering.project import project_files
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.symbols import SymbolIndex
from nestor.runtime.features.small.understanding.intent import looks_like_code
from nestor.runtime.features.small.verifying.test_command import runnable_test_command
from nestor.runtime.features.small.workspace import PlannedEdit, Workspace


async def rename(work: Workspace, old: str, new: str) -> str | None:
    """Rename every whole-word ``old`` to ``new`` in the project's files, then run the tests."""
    pattern = re.compile(rf"\b{re.escape(old)}\b")
    (found,) = await work.host.run_tools([("grep", {"pattern": pattern.pattern})])
    edits: list[PlannedEdit] = []
    for path, number in found.metadata.get("hits", []):
        lines = (work.reader.read_text(str(path)) or "").splitlines()
        if not 0 < int(number) <= len(lines):
            continue
        line = lines[int(number) - 1]
        edit = PlannedEdit(str(path), line, pattern.sub(new, line), replace_all=True)
        if edit not in edits:
            edits.append(edit)
    if not edits:
        return f"I found no occurrence of `{old}` in the project, so nothing was renamed."
    problems: list[str] = []
    applied = await work.run_edits(edits, problems)
    command = runnable_test_command(work.reader) if "bash" in work.host.tool_names() else None
    failure = await work.run_tests(command)
    summary = (
        f"Renamed `{old}` to `{new}` in {len(edits)} lines of {len(applied)} files: {', '.join(applied)}."
    )
    if problems:
        summary += "\nNot changed:\n" + "\n".join(f"- {problem}" for problem in problems)
    if command:
        summary += f"\nTests (`{command}`): " + ("pass." if failure is None else f"fail:\n{failure[-1500:]}")
    return summary


def project_has(reader: ProjectReader, symbols: SymbolIndex) -> Callable[[str], bool]:
    """A test of whether the project has a name (what a rename request may name).

    It has it when it defines it in Python, or when a file has it as a code-like word
    (``snake_case``, ``CamelCase``).
    """

    def has(name: str) -> bool:
        if name in symbols:
            return True
        if not looks_like_code(name):
            return False
        word = re.compile(rf"\b{re.escape(name)}\b")
        files = project_files(reader.root)
        return any(word.search(reader.read_text(path) or "") for path in files)

    return has
