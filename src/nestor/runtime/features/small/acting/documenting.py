"""Documentation edits: a docstring or a comment added to one function, class or variable, nothing else.

Asked to "add a one-line docstring to F, change nothing else", the harness read an addition of a
function. A documentation edit needs one sentence from the model and nothing else of it: nestor
finds the definition (:mod:`..gathering.code_index`, any language with a grammar), shows it to
the model, asks for the sentence, and puts it where the language wants it: a docstring as the
first line of a Python body, ``//``, ``/** */`` or ``///`` on the line above elsewhere. Every other
line of the file stays as it was.
"""

from __future__ import annotations

import re

from nestor.runtime.features.small.acting import prompts
from nestor.runtime.features.small.gathering.code_index import CodeIndex, Definition
from nestor.runtime.features.small.gathering.languages import language_of, parse
from nestor.runtime.features.small.understanding.intent import Intent
from nestor.runtime.features.small.workspace import PlannedEdit, Workspace, change_report

DOC_MAX_TOKENS = 60
MAX_SHOWN_LINES = 60
MAX_SENTENCE_CHARS = 110
_DOCS_REQUEST = re.compile(
    r"\b(?:add|write|put|insert|give)\b[^.?!\n]{0,60}\b(?:docstrings?|doc[- ]?comments?|comments?|jsdoc|"
    r"doc\s+strings?|documentation\s+comments?)\b",
    re.IGNORECASE,
)
_JSDOC = re.compile(r"\bjsdoc\b|/\*\*|\bdoc[- ]?comment\b", re.IGNORECASE)


def asks_for_documentation(prompt: str) -> bool:
    """Whether ``prompt`` asks to add a docstring or a comment."""
    return _DOCS_REQUEST.search(prompt) is not None


async def document(work: Workspace, prompt: str, intent: Intent, index: CodeIndex) -> str | None:
    """Add the docstring or comment the request asks for; None when its target is not found.

    The target is the first name the request writes that the code defines, in a file the request
    allows to change; a Python definition that has a docstring already is left to the general
    edit step (the request then changes it rather than adds one).
    """
    target = _target(intent, index, work)
    if target is None:
        return None
    source = work.reader.read_text(target.path) or ""
    lines = source.splitlines(keepends=True)
    if not 0 < target.line <= len(lines):
        return None
    python = language_of(target.path) == "python"
    body_line = (
        _python_body_line(target.path, source, target) if python and target.kind != "variable" else None
    )
    if python and target.kind != "variable" and body_line is None:
        return None  # a docstring is there already, or the body could not be read
    shown = "".join(lines[target.line - 1 : min(target.end, target.line + MAX_SHOWN_LINES - 1)])
    reply = await work.host.ask(
        prompts.DOCUMENT,
        f'<code file="{target.path}">\n{shown.rstrip()}\n</code>\n\nRequest: {prompt}\n\n'
        f"Write the one sentence about `{target.name}`.",
        max_tokens=DOC_MAX_TOKENS,
    )
    if reply is None:
        return None
    sentence = _sentence(reply)
    if not sentence:
        return "I could not write a sentence for it, so nothing was changed."
    if body_line is not None:
        at, text = body_line, _indent_of(lines[body_line - 1]) + f'"""{sentence}"""\n'
    else:
        at = _above(lines, target.line, rust=language_of(target.path) == "rust")
        marker = _comment(target.path, prompt, sentence)
        text = _indent_of(lines[target.line - 1]) + marker + "\n"
    anchor = "".join(lines[at - 1 : at + 1])
    if source.count(anchor) != 1:
        anchor = "".join(lines[at - 1 : at + 3])
    problems: list[str] = []
    changed = await work.run_edits([PlannedEdit(target.path, anchor, text + anchor)], problems)
    if not changed:
        return "I could not add it: " + "; ".join(problems)
    where = f"`{target.qualified}` ({target.path}:{target.line})"
    return change_report(changed, f"Documented {where}: {sentence}", None, None)


def _target(intent: Intent, index: CodeIndex, work: Workspace) -> Definition | None:
    for term in intent.terms:
        if not term.exact or term.is_file:
            continue
        found = [d for d in index.defined(term.text) if d.kind != "variant"]
        if term.owner is not None:
            found = [d for d in found if d.owner == term.owner] or found
        allowed = [d for d in found if work.scope.allows(d.path, exists=True)]
        if allowed:
            return allowed[0]
    return None


def _python_body_line(path: str, source: str, target: Definition) -> int | None:
    """The line of the first statement of a Python function or class, unless it is a docstring."""
    tree = parse(path, source)
    if tree is None:
        return None
    node = tree.root_node.descendant_for_point_range((target.line - 1, 0), (target.line - 1, 10**6))
    while node is not None and node.type not in ("function_definition", "class_definition"):
        node = node.parent
    body = node.child_by_field_name("body") if node is not None else None
    first = body.named_children[0] if body is not None and body.named_children else None
    if first is None or first.start_point[0] == node.start_point[0]:  # pyright: ignore[reportOptionalMemberAccess]
        return None
    if (
        first.type == "expression_statement"
        and first.named_children
        and first.named_children[0].type == "string"
    ):
        return None
    return first.start_point[0] + 1


def _above(lines: list[str], line: int, *, rust: bool) -> int:
    """The line a comment about the definition at ``line`` goes on: above it (and above its attributes)."""
    at = line
    while rust and at > 1 and lines[at - 2].lstrip().startswith("#["):
        at -= 1
    return at


def _comment(path: str, prompt: str, sentence: str) -> str:
    if language_of(path) == "rust":
        return f"/// {sentence}"
    if _JSDOC.search(prompt):
        return f"/** {sentence} */"
    return f"// {sentence}"


def _sentence(reply: str) -> str:
    """The model's sentence, on one line, without quotes, comment markers or code fences."""
    lines = [
        line.strip() for line in reply.strip().splitlines() if line.strip() and not line.startswith("```")
    ]
    if not lines:
        return ""
    text = re.sub(r'^(?:/{2,3}|/\*\*?|\*|#|"""|\'\'\'|["\'`])\s*', "", lines[0])
    text = re.sub(r'\s*(?:\*/|"""|\'\'\'|["\'`])$', "", text).strip()
    text = text.replace('"""', "'").replace("*/", "")
    if len(text) > MAX_SENTENCE_CHARS:
        text = text[:MAX_SENTENCE_CHARS].rsplit(" ", 1)[0]
    if text and text[-1] not in ".!?":
        text += "."
    return text[:1].upper() + text[1:]


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]
