"""Writing tests for new code: a test module kept only if the tests pass with it.

A new test that fails inside the new code shows the code wrong, not the test: the code is then
fixed like any failing code (:mod:`.fixes`) or written again (:mod:`.members`). A new test that
then fails on its own lines is left out, one at most.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath

from nestor.runtime.features.small.acting import prompts
from nestor.runtime.features.small.acting.fixes import fix_by_infilling
from nestor.runtime.features.small.acting.members import write_member
from nestor.runtime.features.small.gathering.code_index import code_index, owned_by
from nestor.runtime.features.small.gathering.functions import functions_named, parsed, without_function
from nestor.runtime.features.small.gathering.project import is_test_path, project_files
from nestor.runtime.features.small.gathering.reader import ProjectReader
from nestor.runtime.features.small.gathering.symbols import SymbolIndex
from nestor.runtime.features.small.understanding.additions import (
    Addition,
    import_line,
    merged_test_module,
    uses,
    written_test_module,
)
from nestor.runtime.features.small.understanding.intent import Intent, search_terms
from nestor.runtime.features.small.workspace import (
    EDIT_ATTEMPTS,
    EDIT_MAX_TOKENS,
    PlannedEdit,
    Workspace,
    traceback_locations,
    trim_lines,
)

MAX_DROPPED_TESTS = 1
MAX_TESTED_LINES = 80
"""Lines of the code under test shown to the model at most (a class's first ones)."""
_ASSERTION_FAILED = re.compile(r"^E\s+(?:assert\b|AssertionError\b)", re.MULTILINE)


async def add_tests(
    work: Workspace,
    addition: Addition,
    path: str,
    code: str,
    prompt: str,
    command: str | None,
    *,
    fix_code: bool = True,
) -> str:
    """Have the model write a test module for the new code; kept only if the tests pass with it.

    A test that fails inside the new code shows the code wrong, not the test: then the model
    writes the code again, shown the failure. With ``fix_code`` False (tests asked for of code
    that exists), the code stays as it is and a failing test is written again; the tests go at
    the end of the test module whose tests call the code most, unless the request names one.
    """
    host, reader = work.host, work.reader
    name = addition.owner or addition.name
    # A test module the request names is where the tests go: its fixtures and helpers with them.
    existing_path = _named_test_module(reader, prompt)
    if existing_path is None and not fix_code:
        existing_path = _test_module_calling(reader, addition.name, addition.owner)
    existing = reader.read_text(existing_path) if existing_path else None
    if existing_path is not None and existing is not None:
        example, target = existing_path, existing_path
    else:
        existing = None
        (found,) = await host.run_tools([("grep", {"pattern": rf"^\s*(from|import)\s.*\b{name}\b"})])
        examples = [str(path) for path, _ in found.metadata.get("hits", []) if is_test_path(str(path))]
        example = examples[0] if examples else None
        directory = str(PurePosixPath(example).parent) if example else "tests"
        target = f"{directory}/test_{addition.name.lstrip('_')}.py"
        if reader.read_text(target) is not None:
            target = f"{directory}/test_{addition.name.lstrip('_')}_added.py"
    notes: list[str] = []
    for attempt in range(EDIT_ATTEMPTS):
        request = _test_request(
            reader, example, path, code, addition, prompt, notes, appending=existing is not None
        )
        reply = await host.ask(prompts.ADD_TEST, request, max_tokens=EDIT_MAX_TOKENS, attempt=attempt)
        if reply is None:
            break
        module = written_test_module(reply)
        if module is None:
            notes = ["Your reply had no valid Python module with test functions."]
            continue
        if not uses(module, addition.name):
            # A copy of the example passes and tests nothing new (found blind on itsdangerous).
            notes = [f"Your tests never used `{addition.name}`: each test must call it."]
            continue
        written = module if existing is None else merged_test_module(existing, module)
        new_tests = set(_test_names(written)) - set(_test_names(existing or ""))
        problems: list[str] = []
        if not await work.run_edits([PlannedEdit(target, existing or "", written)], problems):
            return f"I could not write {target}: " + "; ".join(problems)
        failure = await work.run_tests(command)
        inside = failure is not None and fix_code and _fails_inside(reader, failure, path, addition.name)
        if failure is not None and command and inside:
            # Fixed like any failing code: statement by statement, then written again whole.
            # A version that moves the failure into the test's own lines is the fix the test
            # needed to show its own bug (it sorts Items too, say): that test goes next.
            members = functions_named(path, reader.read_text(path) or "", {addition.name})

            def settles(after: str | None) -> bool:
                return after is None or _broken_test(after, target) is not None

            if await fix_by_infilling(work, members, failure, command, None, settles) is not None:
                failure = await work.run_tests(command)
            else:
                note = f"Your `{addition.name}` failed this test:\n" + trim_lines(failure, 15)
                rewritten = await write_member(
                    work, addition, path, prompt, [note], attempt + 1, command=None
                )
                if rewritten is not None and rewritten[1] is None:
                    code = rewritten[0]
                    failure = await work.run_tests(command)
        dropped: list[str] = []
        while failure is not None and command and len(dropped) < MAX_DROPPED_TESTS:
            broken = _broken_test(failure, target)
            if broken not in new_tests or not await _drop_test(work, target, broken):
                break
            dropped.append(broken)
            failure = await work.run_tests(command)
        if failure is None:
            report = f"Added tests in {target}."
            if dropped:
                names = ", ".join(f"`{name}`" for name in dropped)
                report += f" I left out {names}: it failed in its own code, not in `{addition.name}`."
            return report + (f"\nTests (`{command}`): pass." if command else "")
        notes = [f"Your test module failed:\n{trim_lines(failure, 15)}"]
        work.restore([target])  # the module as it was: gone if new, its old bytes if not
    return "I could not write a test for it that passes, so I added none." + (
        f"\nTests (`{command}`): pass." if command else ""
    )


def tested_code(
    reader: ProjectReader, intent: Intent, symbols: SymbolIndex
) -> tuple[Addition, str, str] | None:
    """The Python function, method or class a request for tests names: what, where, and its code.

    The first name of the request that the project defines exactly once outside its tests
    (``Inventory.remove`` by its class when written so); None when there is none.
    """
    for term in intent.terms:
        if not term.exact or term.is_file:
            continue
        found = owned_by(
            [
                symbol
                for symbol in symbols.definitions(term.text)
                if symbol.kind in ("function", "method", "class")
                and symbol.path.endswith(".py")
                and not is_test_path(symbol.path)
            ],
            term.owner,
        )
        if len(found) != 1:
            continue
        symbol = found[0]
        lines = (reader.read_text(symbol.path) or "").splitlines()[symbol.line - 1 : symbol.end]
        code = "\n".join(lines[:MAX_TESTED_LINES]) + "\n"
        owner = symbol.owner if symbol.kind == "method" else None
        return Addition(symbol.name, "method" if owner else "function", owner), symbol.path, code
    return None


def _test_module_calling(reader: ProjectReader, name: str, owner: str | None) -> str | None:
    """The Python test module whose tests call ``name`` (of ``owner``) most, if any does."""
    tests = [path for path in project_files(reader.root) if path.endswith(".py") and is_test_path(path)]
    return code_index(reader, tests).test_file_calling(name, owner)


def _named_test_module(reader: ProjectReader, prompt: str) -> str | None:
    """An existing test module the prompt names (``tests/test_timed.py``, ``test_dicttoolz.py``)."""
    for term in search_terms(prompt):
        if not term.is_file or not term.text.endswith(".py"):
            continue
        found = [path for path in project_files(reader.root) if path.endswith(term.text)]
        exact = [path for path in found if path == term.text or path.endswith("/" + term.text)]
        if len(exact) == 1 and is_test_path(exact[0]):
            return exact[0]
    return None


async def _drop_test(work: Workspace, module: str, name: str) -> bool:
    """Take the test function ``name`` out of ``module``, unless it is the module's only test."""
    source = work.reader.read_text(module) or ""
    spans = functions_named(module, source, {name})
    others = [
        node.name
        for node in parsed(source).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test")
        and node.name != name
    ]
    if len(spans) != 1 or not others:
        return False
    kept = without_function(source, spans[0])
    return bool(await work.run_edits([PlannedEdit(module, source, kept)], []))


def _fails_inside(reader: ProjectReader, failure: str, path: str, name: str) -> bool:
    """Whether a traceback of ``failure`` passes through the function ``name`` of ``path``."""
    spans = functions_named(path, reader.read_text(path) or "", {name})
    return any(
        frame == path and span.start <= line <= span.end
        for frame, line in traceback_locations(failure)
        for span in spans
    )


def _broken_test(failure: str, module: str) -> str | None:
    """The test of ``module`` that failed on an error in its own lines, if that is the failure.

    An assertion that fails says the code under test gave the wrong result; an exception raised
    by the test's own lines (``sorted()`` of objects that do not order) says the test is wrong.
    """
    frames = traceback_locations(failure)
    if not frames or frames[-1][0] != module or _ASSERTION_FAILED.search(failure):
        return None
    match = re.search(rf"^FAILED {re.escape(module)}::(\w+)", failure, re.MULTILINE)
    return match.group(1) if match else None


def _test_request(
    reader: ProjectReader,
    example: str | None,
    path: str,
    code: str,
    addition: Addition,
    prompt: str,
    notes: list[str],
    *,
    appending: bool = False,
) -> str:
    """The test step's prompt: the new code, how to import it, an example test module, the request.

    With ``appending``, the example is the module the new tests go at the end of, shown longer.
    """
    parts = [f'<new-code file="{path}">\n{code.rstrip()}\n</new-code>']
    if (line := import_line(path, addition.owner or addition.name)) is not None:
        parts.append(f"Import it with: {line}")
    if example is not None:
        shown = (reader.read_text(example) or "").splitlines()[: 120 if appending else 40]
        head = "\n".join(shown)
        parts.append(f'<example-test file="{example}">\n{head}\n</example-test>')
        if appending:
            parts.append(
                "Your tests go at the end of this module: use its imports, fixtures and helper classes."
            )
        conftest = str(PurePosixPath(example).parent / "conftest.py")
        if fixtures := reader.read_text(conftest):
            shown = "\n".join(fixtures.splitlines()[:40])
            parts.append(
                f'<fixtures file="{conftest}">\n{shown}\n</fixtures>\n'
                "(pytest gives these fixtures to any test that names them as an argument.)"
            )
    if notes:
        parts.append("\n".join(notes))
    parts.append(f"Request: {prompt}\n\nWrite the test module for `{addition.name}`.")
    return "\n\n".join(parts)


def _test_names(module: str) -> list[str]:
    """The test functions (and test methods) of ``module``."""
    return [
        node.name
        for node in ast.walk(parsed(module))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]
