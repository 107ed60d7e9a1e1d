"""A change to one named function, in any language: the model writes the function again, whole.

"Give to_csv an optional `delimiter` parameter", "extract the loop of by_location into a helper",
"log each removal in remove_item": a request that names one function of the project and changes
it. Asked for SEARCH/REPLACE blocks, the 1.5B model loses the format; asked to write the one
function again with the change (a helper it needs before it, in the same block), it writes a
fair one. nestor puts the block where the function was, at its indentation, checks that the file
still parses and still defines the function, and runs the tests; a version that fails is undone
and written again, shown the failure.
"""

from __future__ import annotations

import ast
import re
import textwrap

from nestor.runtime.features.small.acting import prompts
from nestor.runtime.features.small.acting.edit_blocks import parse_edit_blocks
from nestor.runtime.features.small.acting.edits import apply_blocks
from nestor.runtime.features.small.gathering.code_index import CodeIndex, Definition, code_index
from nestor.runtime.features.small.gathering.functions import CODE_BLOCK
from nestor.runtime.features.small.gathering.languages import language_of, parses_cleanly
from nestor.runtime.features.small.understanding.intent import Intent
from nestor.runtime.features.small.workspace import (
    EDIT_ATTEMPTS,
    EDIT_MAX_TOKENS,
    PlannedEdit,
    Workspace,
    change_report,
    trim_lines,
)

MAX_FUNCTION_LINES = 80
"""A longer function is not written again whole (the edit blocks take it)."""


def named_function(intent: Intent, index: CodeIndex) -> Definition | None:
    """The one function or method the request names, when it names exactly one the project defines.

    Each name the request writes that the code defines as a function outside the tests counts; a
    name defined more than once (in two classes, say) counts only when written with its owner
    (``key`` in "an optional `key` parameter" is no function of the request's).
    """
    found: dict[str, Definition] = {}
    for term in intent.terms:
        if not term.exact or term.is_file:
            continue
        definitions = index.functions_named(term.text, term.owner)
        if len(definitions) == 1:
            found[definitions[0].qualified] = definitions[0]
    if len(found) != 1:
        return None
    (definition,) = found.values()
    return definition if definition.end - definition.line < MAX_FUNCTION_LINES else None


async def rewrite_function(
    work: Workspace, definition: Definition, prompt: str, command: str | None
) -> str | None:
    """Have the model write ``definition`` again as ``prompt`` asks, until the tests pass.

    Returns the report (a failing last version is left for the verdict to undo), or None when a
    budget stopped the run.
    """
    path, name = definition.path, definition.name
    notes: list[str] = []
    said = ""
    for attempt in range(EDIT_ATTEMPTS):
        source = work.reader.read_text(path) or ""
        lines = source.splitlines(keepends=True)
        original = "".join(lines[definition.line - 1 : definition.end])
        decorated = definition.line > 1 and lines[definition.line - 2].lstrip().startswith("@")
        request = _request(path, original, prompt, notes)
        reply = await work.host.ask(
            prompts.REWRITE_FUNCTION, request, max_tokens=EDIT_MAX_TOKENS, attempt=attempt
        )
        if reply is None:
            return None
        code = _code(reply, keep_decorators=not decorated)
        if code and path.endswith(".py"):
            code = _without_context(code, source) or None
        written = _placed(code, lines, definition, _class_line(work, definition)) if code else None
        if written is not None and written[1].strip() == written[0].strip():
            written = None
        if written is None and (blocks := parse_edit_blocks(reply)):
            # Edit blocks instead of the function: applied as the edit step applies them.
            applied, notes = await apply_blocks(work, blocks, [path])
            if applied:
                said = reply
                failure = await work.run_tests(command) if command else None
                if failure is None:
                    return change_report(applied, reply, command, passed=True if command else None)
                work.restore(applied)
                notes = [f"Your change made the tests fail, so it was undone:\n{trim_lines(failure, 15)}"]
            continue
        if written is None:
            notes = [f"Your reply had no code block with a new version of `{name}`."]
            continue
        old, new = written
        problem = _problem(path, source.replace(old, new, 1), new, name)
        if problem is not None:
            notes = [f"Your version was not used: {problem}."]
            continue
        problems: list[str] = []
        if not await work.run_edits([PlannedEdit(path, old, new)], problems):
            notes = problems
            continue
        said = _prose(reply)
        failure = await work.run_tests(command) if command else None
        if failure is None:
            return change_report([path], f"Rewrote `{definition.qualified}` ({path}). {said}", command, True)
        await work.run_edits([PlannedEdit(path, new, old)], [])
        tail = trim_lines(failure, 15)
        notes = [f"Your version of `{name}` made the tests fail, so it was undone:\n{tail}"]
    return change_report([], said, command, passed=False if command else None)


def _request(path: str, original: str, prompt: str, notes: list[str]) -> str:
    parts = [f'<function file="{path}">\n{textwrap.dedent(original).rstrip()}\n</function>', *notes]
    parts.append(f"Request: {prompt}\n\nWrite the whole function again with that change.")
    return "\n\n".join(parts)


def _code(reply: str, *, keep_decorators: bool) -> str | None:
    """The code of the model's reply (its first code block), dedented; None when it has none.

    Without ``keep_decorators``, decorators the model repeats are dropped: the file keeps its own.
    """
    match = CODE_BLOCK.search(reply)
    if match is None:
        return None
    # Small models echo the prompt's markup (`<function file="index.js">`) inside their block.
    code = textwrap.dedent(_ECHOED_MARKUP.sub("", match.group(1))).strip("\n")
    if not keep_decorators:
        code = re.sub(r"\A(?:@[^\n]*\n)+", "", code)
    return code or None


_ECHOED_MARKUP = re.compile(r"^[ \t]*</?function\b[^>\n]*>[ \t]*(?:\n|$)", re.MULTILINE)


def _without_context(code: str, source: str) -> str:
    """The model's Python code without the module's context it wrote again.

    Shown one function, a small model writes the imports and constants it imagines around it
    (``CSV_HEADER = ["SKU", ...]``, wrong): a top-level import or assignment of a name the file
    already has is dropped; new functions, classes, imports and names stay.
    """
    try:
        tree, module = ast.parse(code), ast.parse(source)
    except SyntaxError:
        return code
    defined = {name for node in module.body for name in _bound_names(node)}
    lines = code.splitlines()
    dropped: set[int] = set()
    for node in tree.body:
        names = _bound_names(node)
        context = isinstance(node, ast.Import | ast.ImportFrom | ast.Assign | ast.AnnAssign)
        if context and names and names <= defined:
            dropped.update(range(node.lineno - 1, node.end_lineno or node.lineno))
    kept = [line for number, line in enumerate(lines) if number not in dropped]
    return re.sub(r"\n{3,}", "\n\n\n", "\n".join(kept)).strip("\n")


def _bound_names(node: ast.stmt) -> set[str]:
    """The names a top-level statement binds (an import's, an assignment's, a definition's)."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    if isinstance(node, ast.Assign):
        return {target.id for target in node.targets if isinstance(target, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    return set()


def _placed(code: str, lines: list[str], definition: Definition, class_line: int | None) -> tuple[str, str]:
    """``(old, new)``: the file's text the model's code replaces, and what replaces it.

    The code goes where the function was, at its indentation. For a method, helpers the model
    wrote at the margin, above a method it indented, are module-level functions: they go above
    the class, and the method in its place.
    """
    original = "".join(lines[definition.line - 1 : definition.end])
    first = lines[definition.line - 1]
    indent = first[: len(first) - len(first.lstrip())]
    code_lines = code.splitlines()
    defining = re.compile(rf"\s*(?:async\s+)?(?:def|function|fn|func)\b.*\b{re.escape(definition.name)}\b")
    start = next((i for i, line in enumerate(code_lines) if defining.match(line)), None)
    target_indent = len(code_lines[start]) - len(code_lines[start].lstrip()) if start is not None else 0
    if class_line is not None and start is not None and start > 0:
        if target_indent > 0:
            helpers = textwrap.dedent("\n".join(code_lines[:start])).strip("\n")
            method = textwrap.dedent("\n".join(code_lines[start:]))
        else:  # all at one margin: a helper without `self` or `cls` is a module's function
            helpers, method = _module_level(code_lines, start)
        if helpers:
            above = "".join(lines[class_line - 1 : definition.line - 1])
            return above + original, helpers + "\n\n\n" + above + _indented(method, indent)
    return original, _indented(code, indent)


def _module_level(code_lines: list[str], start: int) -> tuple[str, str]:
    """The module-level part of Python code written before a method (line ``start``), and the rest.

    Module-level: its imports, and functions whose first parameter is not ``self`` or ``cls``.
    """
    try:
        tree = ast.parse("\n".join(code_lines))
    except SyntaxError:
        return "", "\n".join(code_lines)
    module: set[int] = set()
    for node in tree.body:
        if node.lineno - 1 >= start:
            break
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1
        if isinstance(node, ast.Import | ast.ImportFrom):
            module.update(range(first, node.end_lineno or node.lineno))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args.posonlyargs + node.args.args
            if not arguments or arguments[0].arg not in ("self", "cls"):
                module.update(range(first, node.end_lineno or node.lineno))
    helpers = "\n".join(line for number, line in enumerate(code_lines) if number in module)
    rest = "\n".join(line for number, line in enumerate(code_lines) if number not in module)
    return re.sub(r"\n{3,}", "\n\n\n", helpers).strip("\n"), rest.strip("\n")


def _indented(code: str, indent: str) -> str:
    return textwrap.indent(code, indent, lambda line: bool(line.strip())) + "\n"


def _class_line(work: Workspace, definition: Definition) -> int | None:
    """The first line of the class a method is in (None for a function)."""
    if definition.owner is None:
        return None
    classes = [
        candidate
        for candidate in code_index(work.reader, [definition.path]).defined(definition.owner)
        if candidate.line <= definition.line <= candidate.end
    ]
    if not classes:
        return None
    lines = (work.reader.read_text(definition.path) or "").splitlines()
    line = classes[-1].line
    while line > 1 and lines[line - 2].lstrip().startswith("@"):  # the class's decorators stay on it
        line -= 1
    return line


def _problem(path: str, changed: str, written: str, name: str) -> str | None:
    """What makes the file with the new version (``written``, in ``changed``) unusable, or None."""
    if parses_cleanly(path, changed) is False:
        return "the file would not parse with it"
    # `def add(`, `fn add<T>(`, `func (v T) Add(`, a method's `format(value) {`, `pad = (...) =>`,
    # `pad: function`: the name still followed by what defines it in some language.
    if language_of(path) is not None and not re.search(rf"\b{re.escape(name)}\s*(?:\(|<|[:=])", written):
        return f"it does not define `{name}` any more"
    return None


def _prose(reply: str) -> str:
    """The model's words outside its code block, on one line."""
    prose = CODE_BLOCK.sub("", reply)
    return " ".join(line.strip() for line in prose.splitlines() if line.strip())[:300]


# A request that takes the function away, or moves it, is no new version of it.
_TAKES_AWAY = re.compile(r"(?:^|[.!?]\s+)(?:please\s+)?(?:remove|delete|drop|inline|move|rename)\b", re.I)


def rewrite_target(intent: Intent, prompt: str, work: Workspace) -> Definition | None:
    """The function a change request names, when the request may change its file."""
    if _TAKES_AWAY.search(prompt):
        return None
    definition = named_function(intent, code_index(work.reader))
    if definition is None or not work.scope.allows(definition.path, exists=True):
        return None
    return definition
