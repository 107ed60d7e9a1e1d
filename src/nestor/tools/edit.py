"""The ``edit`` tool: replace exact text in a file, keeping its line endings."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from nestor.core.errors import ToolError
from nestor.tools._text import TextFile, missing_file_error, read_text_file, unified_diff, write_bytes
from nestor.tools.base import (
    PermissionRequest,
    Tool,
    ToolContext,
    ToolResult,
    WithheldFilter,
    path_permission,
)
from nestor.tools.editor_files import EditorFiles, editor_text, write_text

if TYPE_CHECKING:
    from nestor.tools.lsp.manager import LspManager

MAX_DIFF_LINES_SHOWN = 40


class EditParams(BaseModel):
    """Arguments of the ``edit`` tool."""

    path: str = Field(description="The file to edit: absolute, or relative to the project root.")
    old_string: str = Field(
        description="The exact text to replace, including whitespace and indentation; it must occur "
        "exactly once unless replace_all is true. Empty only to create a new file."
    )
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(
        default=False, description="True to replace every occurrence of old_string, not just one."
    )


class EditTool(Tool[EditParams]):
    """Replaces an exact, unique piece of a file's text (or every occurrence, on request)."""

    name = "edit"
    params_model = EditParams

    def __init__(self, lsp: LspManager | None = None, files: EditorFiles | None = None) -> None:
        self._lsp = lsp
        self._files = files

    def permission(self, params: EditParams, ctx: ToolContext) -> PermissionRequest | None:
        """Every edit needs a permission decision."""
        return path_permission(self.name, "write", params.path, ctx)

    async def run(self, params: EditParams, ctx: ToolContext) -> ToolResult:
        """Apply the replacement and report it with a diff (and new diagnostics, where a server runs)."""
        path = ctx.resolve(params.path)
        shown_as = ctx.display_path(path)
        if self._files is None:
            result = await asyncio.to_thread(apply_edit, path, params, shown_as)
        else:
            result = await apply_edit_in_editor(self._files, path, params, shown_as)
        # Where a language server runs, the model sees the problems its change brought in.
        return (
            result
            if self._lsp is None
            else await self._lsp.annotate(result, path, shown_as, WithheldFilter("diagnostics", ctx))
        )


def apply_edit(path: Path, params: EditParams, shown_as: str) -> ToolResult:
    """Replace ``params.old_string`` in ``path`` (or create the file when it is empty)."""
    before = _file_to_edit(path, params, shown_as)
    if before is None:
        write_bytes(path, params.new_string.encode("utf-8"), shown_as)
        return _created(path, params.new_string, shown_as)
    after, replacements = replaced_text(before.text, params, shown_as)
    write_bytes(path, before.encode(after), shown_as)
    return _edited(path, before.text, after, replacements, shown_as)


async def apply_edit_in_editor(
    files: EditorFiles, path: Path, params: EditParams, shown_as: str
) -> ToolResult:
    """:func:`apply_edit` on the editor's text of the file (its unsaved changes), written back through it."""
    on_disk = await asyncio.to_thread(_file_to_edit, path, params, shown_as)
    if on_disk is None:
        await write_text(files, path, params.new_string, shown_as)
        return _created(path, params.new_string, shown_as)
    before = await editor_text(files, path, on_disk)
    after, replacements = replaced_text(before.text, params, shown_as)
    await write_text(files, path, after, shown_as, before.encode)
    return _edited(path, before.text, after, replacements, shown_as)


def _file_to_edit(path: Path, params: EditParams, shown_as: str) -> TextFile | None:
    """The file an edit changes, read and checked; None when the edit creates it."""
    if params.old_string == params.new_string:
        raise ToolError("old_string and new_string are identical, so there is nothing to change.")
    if not path.exists():
        if params.old_string:
            missing = missing_file_error(path, shown_as).message
            raise ToolError(f"{missing} To create a new file, use the write tool.")
        return None
    text_file = read_text_file(path, shown_as)
    if not params.old_string:
        raise ToolError(
            f"old_string is empty but {shown_as} already exists; give the exact text to replace, "
            "or use the write tool to replace the whole file."
        )
    return text_file


def replaced_text(before: str, params: EditParams, shown_as: str) -> tuple[str, int]:
    """``before`` with the edit applied, and how many replacements it made.

    Raises:
        ToolError: ``old_string`` is not there, or is there more than once without ``replace_all``.

    """
    old, new = match_line_endings(before, params.old_string, params.new_string)
    count = before.count(old)
    if count == 0:
        raise _not_found_error(before, params.old_string, shown_as)
    if count > 1 and not params.replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {shown_as}; include more surrounding lines to make "
            "it unique, or set replace_all to true to replace every occurrence."
        )
    after = before.replace(old, new) if params.replace_all else before.replace(old, new, 1)
    return after, count if params.replace_all else 1


def _edited(path: Path, before: str, after: str, replacements: int, shown_as: str) -> ToolResult:
    diff = unified_diff(before, after, shown_as)
    noun = "replacement" if replacements == 1 else "replacements"
    content = f"Edited {shown_as}: {replacements} {noun}.\n\n{_diff_excerpt(diff)}"
    return ToolResult(
        content=content, metadata={"path": str(path), "replacements": replacements, "diff": diff}
    )


def _created(path: Path, content: str, shown_as: str) -> ToolResult:
    diff = unified_diff("", content, shown_as)
    return ToolResult(
        content=f"Created {shown_as} ({len(content.encode('utf-8'))} bytes).",
        metadata={"path": str(path), "replacements": 0, "created": True, "diff": diff},
    )


def match_line_endings(content: str, old: str, new: str) -> tuple[str, str]:
    r"""Give ``old`` and ``new`` the file's line endings when it uses ``\r\n`` throughout.

    Models write ``\n``; converting the strings, not the file, leaves every other byte as it was
    (a file with mixed endings is matched as given).
    """
    crlf = content.count("\r\n")
    if crlf == 0 or crlf != content.count("\n"):
        return old, new

    def to_crlf(text: str) -> str:
        return text.replace("\r\n", "\n").replace("\n", "\r\n")

    return to_crlf(old), to_crlf(new)


def _not_found_error(content: str, old: str, shown_as: str) -> ToolError:
    message = f"old_string was not found in {shown_as}."
    if " ".join(old.split()) in " ".join(content.split()):
        hint = (
            " It does match when whitespace is ignored: check indentation, tabs versus spaces "
            "and line breaks."
        )
    else:
        hint = (
            " It must match the file exactly, including whitespace and indentation; view the file "
            "and copy the text."
        )
    return ToolError(message + hint)


def _diff_excerpt(diff: str) -> str:
    lines = diff.splitlines()
    if len(lines) <= MAX_DIFF_LINES_SHOWN:
        return diff
    hidden = len(lines) - MAX_DIFF_LINES_SHOWN
    return "\n".join([*lines[:MAX_DIFF_LINES_SHOWN], f"… ({hidden} more diff lines)"])
