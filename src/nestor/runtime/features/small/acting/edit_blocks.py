"""Edits a small model gets right: SEARCH/REPLACE blocks, read leniently and matched to the file.

A block is the file's path on a line of its own, then::

    <<<<<<< SEARCH
    lines now in the file
    =======
    lines to put in their place
    >>>>>>> REPLACE

Small models copy the lines they mean to replace well, but not perfectly: indentation drifts,
trailing spaces go, a line number from the excerpt sneaks in. :func:`locate` finds the text the
model meant in the real file (exactly, then ignoring line numbers, then ignoring whitespace at the
ends of lines, then ignoring indentation consistently) and returns the file's own text, so the
edit tool's exact matching still guards what changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SEARCH = re.compile(r"^\s*<{5,9}\s*SEARCH\s*$")
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_REPLACE = re.compile(r"^\s*>{5,9}\s*REPLACE\s*$")
_FENCE = re.compile(r"^\s*```")
_PATH = re.compile(r"^[\s*#`>-]*(?:file:\s*)?([\w./-]+\.\w+|[\w./-]*/[\w.-]+|Makefile|Dockerfile)[`*:\s]*$")
_LINE_NUMBER = re.compile(r"^\s*\d+[:|]\s?")


@dataclass(frozen=True, slots=True)
class EditBlock:
    """One SEARCH/REPLACE block: ``search`` is empty for a new file or an addition at the end."""

    path: str
    search: str
    replace: str


def parse_edit_blocks(text: str) -> list[EditBlock]:
    """Every complete SEARCH/REPLACE block in ``text``, with the path written before it.

    A block without a path uses the previous block's path; an unfinished block is dropped.
    """
    blocks: list[EditBlock] = []
    lines = text.splitlines()
    path = ""
    index = 0
    while index < len(lines):
        line = lines[index]
        if not _SEARCH.match(line):
            candidate = _PATH.match(line)
            if candidate and not _FENCE.match(line):
                path = candidate.group(1)
            index += 1
            continue
        search, replace, index = _block_body(lines, index + 1)
        if replace is not None and path:
            blocks.append(EditBlock(path, search, replace))
    return blocks


def _block_body(lines: list[str], index: int) -> tuple[str, str | None, int]:
    """The search and replace texts of a block starting at ``index``; replace None when unfinished."""
    search: list[str] = []
    while index < len(lines) and not _DIVIDER.match(lines[index]):
        if _SEARCH.match(lines[index]) or _REPLACE.match(lines[index]):
            return "", None, index
        search.append(lines[index])
        index += 1
    index += 1
    replace: list[str] = []
    while index < len(lines) and not _REPLACE.match(lines[index]):
        if _SEARCH.match(lines[index]):
            return "", None, index
        replace.append(lines[index])
        index += 1
    if index >= len(lines):
        return "", None, index
    return _joined(search), _joined(replace), index + 1


def _joined(lines: list[str]) -> str:
    return "\n".join(lines) + ("\n" if lines else "")


@dataclass(frozen=True, slots=True)
class Located:
    """Where a block's SEARCH text is in the file: the file's own text, and the replacement for it."""

    old: str
    new: str


def locate(block: EditBlock, file_text: str) -> Located | None:
    """The file's text the block means to replace, and its replacement; None when not found once.

    An empty SEARCH appends to the end of the file. A block whose SEARCH is not in the file is
    tried again without the lines it leaves unchanged at either end (:func:`_without_context`).
    """
    located = _located(block, file_text)
    if located is not None or not block.search.strip():
        return located
    for trimmed in _without_context(block):
        located = _located(trimmed, file_text)
        if located is not None:
            return located
    return None


def _without_context(block: EditBlock) -> list[EditBlock]:
    """``block`` with the unchanged lines at its ends taken off one at a time, first ones first.

    A small model wraps the lines it changes in context that is not in the file as it wrote it:
    the braces of the object around a JSON field (``{`` and ``}`` where the file has ``},``), a
    line it misremembers. The lines it changes are in the file; the context is only the anchor.
    """
    search = block.search.rstrip("\n").split("\n")
    replace = block.replace.rstrip("\n").split("\n")
    found: list[EditBlock] = []
    while len(search) > 1 and len(replace) > 1:
        if search[0].strip() == replace[0].strip():
            search, replace = search[1:], replace[1:]
        elif search[-1].strip() == replace[-1].strip():
            search, replace = search[:-1], replace[:-1]
        else:
            break
        if any(line.strip() for line in search):
            found.append(EditBlock(block.path, "\n".join(search) + "\n", "\n".join(replace) + "\n"))
    return found


def _located(block: EditBlock, file_text: str) -> Located | None:
    if not block.search.strip():
        if not file_text:
            return None
        tail = file_text.splitlines(keepends=True)[-1]
        separator = "" if tail.endswith("\n") else "\n"
        return Located(tail, tail + separator + block.replace)
    if file_text.count(block.search) == 1:
        return Located(block.search, block.replace)
    search = block.search.rstrip("\n")
    if search and file_text.count(search) == 1:
        return Located(search, block.replace.rstrip("\n"))
    file_lines = file_text.splitlines(keepends=True)
    wanted = [_LINE_NUMBER.sub("", line, count=1) for line in block.search.rstrip("\n").split("\n")]
    replacement = [_LINE_NUMBER.sub("", line, count=1) for line in block.replace.rstrip("\n").split("\n")]
    for normalise in (str.rstrip, str.strip):
        start = _find_lines(file_lines, wanted, normalise)
        if start is None:
            continue
        original = file_lines[start : start + len(wanted)]
        new_lines = _reindent(replacement, wanted, original)
        old = "".join(original)
        new = "\n".join(new_lines) + ("\n" if old.endswith("\n") else "")
        return Located(old, new)
    return None


def _find_lines(file_lines: list[str], wanted: list[str], normalise: object) -> int | None:
    """The one place where ``wanted`` lines occur in ``file_lines`` after ``normalise``; else None."""
    assert callable(normalise)
    target = [normalise(line) for line in wanted]
    while target and not target[0]:
        target.pop(0)
    if not target:
        return None
    found: list[int] = []
    normalised = [normalise(line.rstrip("\n")) for line in file_lines]
    for start in range(len(normalised) - len(target) + 1):
        if normalised[start : start + len(target)] == target:
            found.append(start)
    return found[0] if len(found) == 1 else None


def _reindent(replacement: list[str], wanted: list[str], original: list[str]) -> list[str]:
    """Shift the replacement by the indentation the model lost or added on its SEARCH lines."""
    model_indent = _indent(next((line for line in wanted if line.strip()), ""))
    file_indent = _indent(next((line for line in original if line.strip()), ""))
    if model_indent == file_indent:
        return replacement
    shifted: list[str] = []
    for line in replacement:
        if line.startswith(model_indent):
            shifted.append(file_indent + line[len(model_indent) :])
        else:
            shifted.append(file_indent + line.lstrip() if line.strip() else line)
    return shifted


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]
