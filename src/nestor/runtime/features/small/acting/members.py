"""Writing a new method, property or function and putting it in place (see :mod:`.adding`).

The model writes the new member alone; nestor puts a method at the end of its class and a
function at the end of its module (before its ``if __name__ == "__main__":`` block, and into
its ``__all__``), and with a test command undoes a version the tests fail.
"""

from __future__ import annotations

import re
import textwrap

from nestor.runtime.features.small.acting import prompts
from nestor.runtime.features.small.gathering.functions import functions_named, without_function
from nestor.runtime.features.small.understanding.additions import Addition, class_span, exported, new_function
from nestor.runtime.features.small.workspace import EDIT_MAX_TOKENS, PlannedEdit, Workspace, trim_lines


async def write_member(
    work: Workspace,
    addition: Addition,
    path: str,
    prompt: str,
    notes: list[str],
    attempt: int,
    *,
    command: str | None = None,
) -> tuple[str, str | None] | None:
    """Have the model write the new member and put it at the end of its class.

    A version already there (one a test showed wrong) is shown and replaced. With a
    ``command``, the tests run after, and a change they fail is undone.

    Returns:
        The code written and what went wrong (None when it is in place), or None when the
        run was stopped or the class is gone.

    """
    source = work.reader.read_text(path) or ""
    span = class_span(source, addition.owner) if addition.owner else (1, _module_end(source))
    if span is None:
        return None
    owner_text = "".join(source.splitlines(keepends=True)[span[0] - 1 : span[1]])
    current = functions_named(path, owner_text, {addition.name})
    # A version that failed a test is shown, and replaced.
    owner_text_without = without_function(owner_text, current[0]) if current else owner_text
    request = _addition_request(path, owner_text, addition, prompt, notes)
    reply = await work.host.ask(prompts.ADD, request, max_tokens=EDIT_MAX_TOKENS, attempt=attempt)
    if reply is None:
        return None
    code = new_function(reply, addition.name)
    if code is None:
        return "", f"Your reply had no complete, valid `def {addition.name}`."
    if addition.kind == "property" and "@property" not in code:
        code = "@property\n" + code
    body = owner_text_without.rstrip("\n")
    indent = _body_indent(owner_text) if addition.owner else ""
    member = textwrap.indent(code, indent, lambda line: bool(line.strip()))
    blank = "\n\n" if addition.owner else "\n\n\n"
    extended = f"{body}{blank}{member.rstrip()}" + (owner_text[len(owner_text.rstrip("\n")) :] or "\n")
    if addition.owner is None:
        extended = exported(extended, addition.name) or extended
    problems: list[str] = []
    if not await work.run_edits([PlannedEdit(path, owner_text, extended)], problems):
        return code, "; ".join(problems)
    failure = await work.run_tests(command) if command else None
    if failure is None:
        return code, None
    await work.run_edits([PlannedEdit(path, extended, owner_text)], [])
    return code, f"With your `{addition.name}` the tests failed; it was undone:\n" + trim_lines(failure, 15)


def _addition_request(path: str, owner: str, addition: Addition, prompt: str, notes: list[str]) -> str:
    """The add step's prompt: the class the new code goes in, then the request."""
    lines = owner.splitlines()
    if len(lines) > 160:  # the class's start (its attributes and __init__) and its end
        lines = [*lines[:60], "    ...", *lines[-90:]]
    parts = [f'<code file="{path}">\n' + "\n".join(lines) + "\n</code>"]
    if notes:
        parts.append("\n".join(notes))
    container = f"class {addition.owner}" if addition.owner else f"module {path}"
    what = f"the {addition.kind} `{addition.name}` of {container}"
    parts.append(f"Request: {prompt}\n\nWrite {what}, and nothing else.")
    return "\n\n".join(parts)


def _module_end(source: str) -> int:
    """The last line of a module's code before its ``if __name__ == "__main__":`` block, if any."""
    lines = source.splitlines()
    for number, line in enumerate(lines, 1):
        if re.match(r"""if\s+__name__\s*==\s*['"]__main__['"]\s*:""", line):
            return max(1, number - 1)
    return max(1, len(lines))


def _body_indent(owner: str) -> str:
    """The indentation of a class's body (four spaces when it cannot be read)."""
    for line in owner.splitlines()[1:]:
        if line.strip():
            return line[: len(line) - len(line.lstrip())] or "    "
    return "    "
