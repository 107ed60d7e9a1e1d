"""Text added at the end of a named file: a README's section, a changelog's entry, a config's line.

Asked to "add a Licence section at the end of README.md", the 1.5B model wrote SEARCH/REPLACE
blocks for a placeholder path and for lines the file does not have, twice, until the time ran
out. An addition at the end needs only the new text from the model: nestor shows the end of the
file, asks for the text to add, and appends it (a blank line before it in a document), every
other line of the file staying as it was. The change is then verified as any other.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from nestor.runtime.features.small.acting import prompts
from nestor.runtime.features.small.gathering.regions import DOC_SUFFIXES
from nestor.runtime.features.small.understanding.intent import Intent
from nestor.runtime.features.small.workspace import PlannedEdit, Workspace, change_report

APPEND_MAX_TOKENS = 200
SHOWN_END_LINES = 30
_AT_THE_END = re.compile(
    r"\b(?:at|to) the (?:very )?(?:end|bottom) of\b|\bappend(?:s|ed|ing)?\b", re.IGNORECASE
)
_NEW_PART = re.compile(
    r"\b(?:add|write|put|insert|include)\b[^.?!\n]{0,80}\b(?:section|paragraph|note|entry|heading|chapter)\b",
    re.IGNORECASE,
)
_FENCE = re.compile(r"^```[\w-]*\n(.*?)\n?```\s*$", re.DOTALL)


def appended_file(prompt: str, intent: Intent, work: Workspace) -> str | None:
    """The file ``prompt`` asks to add text at the end of, if it asks that of one file it allows.

    Either the request says so ("at the end of", "append"), or it adds a section, a note or an
    entry to a document (a README: new parts of a document go at its end unless it says where).
    """
    named = [
        path
        for term in intent.terms
        if term.is_file and (path := _existing(work, term.text)) and work.scope.allows(path, exists=True)
    ]
    if len(set(named)) != 1:
        return None
    path = named[0]
    if _AT_THE_END.search(prompt):
        return path
    document = PurePosixPath(path).suffix.lower() in DOC_SUFFIXES
    return path if document and _NEW_PART.search(prompt) else None


async def append(work: Workspace, path: str, prompt: str) -> str | None:
    """Ask the model for the text to add at the end of ``path`` and add it; None when a budget stopped it."""
    source = work.reader.read_text(path) or ""
    end = "\n".join(source.rstrip("\n").splitlines()[-SHOWN_END_LINES:])
    reply = await work.host.ask(
        prompts.APPEND,
        f'<end-of-file path="{path}">\n{end}\n</end-of-file>\n\nRequest: {prompt}\n\n'
        f"Write only the text to add at the end of {path}.",
        max_tokens=APPEND_MAX_TOKENS,
    )
    if reply is None:
        return None
    text = added_text(reply)
    if not text:
        return "I could not write the text to add, so nothing was changed."
    document = PurePosixPath(path).suffix.lower() in DOC_SUFFIXES
    problems: list[str] = []
    changed = await append_text(work, path, text, blank_line=document, problems=problems)
    if not changed:
        return "I could not add it: " + "; ".join(problems)
    lines = text.count("\n") + 1
    said = f"Added {lines} line{'s' if lines != 1 else ''} at the end of {path}:\n\n{text}"
    return change_report(changed, said, None, None)


async def append_text(
    work: Workspace, path: str, text: str, *, blank_line: bool, problems: list[str]
) -> list[str]:
    """Add ``text`` at the end of ``path`` (after a blank line with ``blank_line``); the files changed.

    Only the file's last characters are replaced, so every other line stays as it was.
    """
    source = work.reader.read_text(path) or ""
    separator = "\n\n" if blank_line and source.strip() else "\n" if source.strip() else ""
    tail = source.rstrip("\n")[-200:]
    old = source[len(source.rstrip("\n")) - len(tail) :]
    return await work.run_edits([PlannedEdit(path, old, tail + separator + text + "\n")], problems)


def _existing(work: Workspace, name: str) -> str | None:
    """The project file ``name`` names (a path, or a file name found once in the project)."""
    resolved = work.reader.resolve(name)
    if resolved is not None and resolved.is_file():
        return resolved.relative_to(work.reader.root).as_posix()
    return None


def added_text(reply: str) -> str:
    """The model's text without a code fence around it or blank lines at its ends."""
    text = reply.strip("\n")
    fenced = _FENCE.match(text.strip())
    if fenced:
        text = fenced.group(1)
    return text.strip("\n").rstrip()
