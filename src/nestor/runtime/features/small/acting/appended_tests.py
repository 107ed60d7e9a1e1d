"""Tests asked for of code that exists, in any language: added at the end of its test file.

The model writes the test; nestor adds it at the end of the test file whose tests call that
code, and keeps it only if the tests pass.

Python projects with pytest get their tests as a module (:mod:`.new_tests`); in JavaScript,
TypeScript, Rust or Go, a test file's end is a place a new test can go (a top-level ``it``/``test``
block, a ``#[test] fn``, a ``func TestX``), so nestor shows the code, the test file's first lines
(what it imports and defines) and its end, asks for the new test alone, appends it, and runs the
tests. A test that fails is taken out again and written anew, shown the failure: the code under
test is never changed for it.
"""

from __future__ import annotations

import re
import textwrap

from nestor.runtime.features.small.acting import prompts
from nestor.runtime.features.small.acting.appending import added_text, append_text
from nestor.runtime.features.small.gathering.code_index import CodeIndex, Definition
from nestor.runtime.features.small.gathering.languages import parse
from nestor.runtime.features.small.understanding.intent import Intent
from nestor.runtime.features.small.workspace import (
    EDIT_ATTEMPTS,
    EDIT_MAX_TOKENS,
    PlannedEdit,
    Workspace,
    trim_lines,
)

SHOWN_HEAD_LINES = 25
SHOWN_END_LINES = 30
MAX_CODE_LINES = 60


def tested_definition(intent: Intent, index: CodeIndex) -> tuple[Definition, str] | None:
    """The code a request for tests names, and the test file whose tests call it most.

    The first name of the request that the project defines once outside its tests (by its owner
    when written ``Owner.name``) and that some test calls; None when there is none.
    """
    for term in intent.terms:
        if not term.exact or term.is_file:
            continue
        found = index.functions_named(term.text, term.owner)
        if len(found) != 1:
            continue
        if (test_file := index.test_file_calling(term.text, found[0].owner)) is not None:
            return found[0], test_file
    return None


async def append_tests(
    work: Workspace, definition: Definition, test_path: str, prompt: str, command: str
) -> str | None:
    """Have the model write a test of ``definition`` and add it at the end of ``test_path``.

    Kept only if the tests pass with it; written again, shown the failure, a few times at most.
    Returns the report, or None when a budget stopped the run.
    """
    lines = (work.reader.read_text(definition.path) or "").splitlines()[definition.line - 1 : definition.end]
    code = "\n".join(lines[:MAX_CODE_LINES])
    notes: list[str] = []
    for attempt in range(EDIT_ATTEMPTS):
        source = work.reader.read_text(test_path) or ""
        request = _test_request(definition, code, test_path, source, prompt, notes)
        reply = await work.host.ask(prompts.APPEND_TEST, request, max_tokens=EDIT_MAX_TOKENS, attempt=attempt)
        if reply is None:
            return None
        text = added_text(reply)
        if not re.search(rf"\b{re.escape(definition.name)}\b", text):
            notes = [f"Your test never called `{definition.name}`: it must call it and check the result."]
            continue
        problems: list[str] = []
        closing = _suite_end(test_path, source)
        if closing is not None:  # inside the file's last suite, where its names are visible
            edit = PlannedEdit(test_path, source, _inserted(source, closing, text))
            changed = await work.run_edits([edit], problems)
        else:
            changed = await append_text(work, test_path, text, blank_line=True, problems=problems)
        if not changed:
            return f"I could not add the test to {test_path}: " + "; ".join(problems)
        failure = await work.run_tests(command)
        if failure is None:
            return f"Added a test at the end of {test_path}:\n\n{text}\n\nTests (`{command}`): pass."
        notes = [f"Your test failed, so it was taken out again:\n{trim_lines(failure, 15)}"]
        work.restore([test_path])
    return f"I could not write a test of `{definition.qualified}` that passes, so I added none."


def _test_request(
    definition: Definition, code: str, test_path: str, source: str, prompt: str, notes: list[str]
) -> str:
    """The prompt: the code under test, the test file's first lines and its end, the request."""
    lines = source.rstrip("\n").splitlines()
    head = "\n".join(lines[:SHOWN_HEAD_LINES])
    end = "\n".join(lines[max(SHOWN_HEAD_LINES, len(lines) - SHOWN_END_LINES) :])
    parts = [
        f'<code file="{definition.path}">\n{code}\n</code>',
        f'<test-file path="{test_path}" part="start">\n{head}\n</test-file>',
    ]
    if end:
        parts.append(f'<test-file path="{test_path}" part="end">\n{end}\n</test-file>')
    parts.extend(notes)
    where = (
        "inside the file's last suite, before its closing line (the names that suite defines are visible)"
        if _suite_end(test_path, source) is not None
        else "at the end of the file, at its top level (names defined inside another block are not visible)"
    )
    parts.append(
        f"Request: {prompt}\n\nWrite only the new test for {test_path}. It goes {where}. It calls "
        f"`{definition.name}` and checks what the request says."
    )
    return "\n\n".join(parts)


def _suite_end(path: str, source: str) -> int | None:
    """The line (0-based) closing the suite the file ends with, if it ends with one.

    A suite is a top-level ``describe(...)``/``suite(...)``/``context(...)`` call, or a Rust ``mod``.
    """
    tree = parse(path, source)
    nodes = tree.root_node.named_children if tree is not None else []
    if not nodes:
        return None
    last = nodes[-1]
    call = last.named_children[0] if last.type == "expression_statement" and last.named_children else None
    is_call = call is not None and call.type == "call_expression"
    function = call.child_by_field_name("function") if call is not None and is_call else None
    called = function.text if function is not None else None
    suite = last.type == "mod_item" or called in (b"describe", b"suite", b"context")
    lines = source.splitlines()
    row = last.end_point[0]
    if suite and row < len(lines) and re.fullmatch(r"\s*\}\)?;?\s*", lines[row]):
        return row
    return None


def _inserted(source: str, closing: int, text: str) -> str:
    """``source`` with ``text`` before its line ``closing``, indented as the suite's first line inside."""
    lines = source.splitlines(keepends=True)
    inner = next((line for line in lines[closing - 1 :: -1] if line.strip()), "")
    indent = " " * (len(inner) - len(inner.lstrip())) if inner.strip() not in ("});", "})", "}") else "  "
    block = textwrap.indent(text, indent, lambda line: bool(line.strip()))
    return "".join(lines[:closing]).rstrip("\n") + "\n\n" + block + "\n" + "".join(lines[closing:])
