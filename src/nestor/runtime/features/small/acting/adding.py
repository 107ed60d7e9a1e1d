"""Adding a method, property or function a request asks for, then its tests.

The new member is written alone and put in place (:mod:`.members`); when the request asks for
tests, a test module follows (:mod:`.new_tests`). The request itself is read by :mod:`.additions`.
"""

from __future__ import annotations

import re

from nestor.runtime.features.small.acting.members import write_member
from nestor.runtime.features.small.acting.new_tests import add_tests
from nestor.runtime.features.small.gathering.project import is_test_path
from nestor.runtime.features.small.gathering.symbols import SymbolIndex
from nestor.runtime.features.small.understanding.additions import Addition
from nestor.runtime.features.small.workspace import EDIT_ATTEMPTS, Workspace, change_report


async def add(
    work: Workspace, addition: Addition, prompt: str, command: str | None, symbols: SymbolIndex
) -> str | None:
    """Add a method, property or function: the model writes it, nestor puts it in place.

    A method goes at the end of its class; a function at the end of its module, and into the
    module's ``__all__`` when it has one. Then, when the request asks for tests, a new test
    module (:func:`.new_tests.add_tests`). Returns the report, or None when the class or module
    is not found (the general edit step takes over).
    """
    if addition.owner is not None:
        (found,) = await work.host.run_tools([("grep", {"pattern": rf"^\s*class\s+{addition.owner}\b"})])
        paths = [str(path) for path, _ in found.metadata.get("hits", []) if not is_test_path(str(path))]
        if not paths:
            return None
        path = paths[0]
    else:
        module = module_of(addition, symbols)
        if module is None:
            return None
        await work.host.run_tools([("view", {"path": module, "limit": 40})])  # the look, as a call
        path = module
    notes: list[str] = []
    for attempt in range(EDIT_ATTEMPTS):
        written = await write_member(work, addition, path, prompt, notes, attempt, command=command)
        if written is None:
            return None
        code, problem = written
        if problem is None:
            break
        notes = [problem]
    else:
        return change_report([], "", command, passed=False if command else None)
    where = f"{addition.owner}.{addition.name}" if addition.owner else addition.name
    report = f"Added the {addition.kind} `{where}` to {path}."
    if re.search(r"\btests?\b", prompt, re.I):
        return report + "\n" + await add_tests(work, addition, path, code, prompt, command)
    return report + (f"\nTests (`{command}`): pass." if command else "")


def module_of(addition: Addition, symbols: SymbolIndex) -> str | None:
    """The module file a new function goes in: one the request names (``dicttoolz``), not a test."""
    if addition.owner is not None or addition.kind != "function":
        return None
    for word in addition.modules:
        paths = [
            symbol.path
            for symbol in symbols.definitions(word)
            if symbol.kind == "module" and not is_test_path(symbol.path) and symbol.path.endswith(".py")
        ]
        if len(paths) == 1:
            return paths[0]
    return None
