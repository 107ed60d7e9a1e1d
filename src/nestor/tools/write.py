"""The ``write`` tool: create or overwrite a file with the given content."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from nestor.core.errors import ToolError
from nestor.core.files import read_bounded_bytes
from nestor.tools._text import MAX_TEXT_FILE_BYTES, unified_diff, write_bytes
from nestor.tools.base import (
    PermissionRequest,
    Tool,
    ToolContext,
    ToolResult,
    WithheldFilter,
    path_permission,
)
from nestor.tools.editor_files import EditorFiles, write_text

if TYPE_CHECKING:
    from nestor.tools.lsp.manager import LspManager


class WriteParams(BaseModel):
    """Arguments of the ``write`` tool."""

    path: str = Field(description="The file to write: absolute, or relative to the project root.")
    content: str = Field(description="The complete new content of the file.")


class WriteTool(Tool[WriteParams]):
    """Writes a whole file as UTF-8, creating missing parent directories."""

    name = "write"
    params_model = WriteParams

    def __init__(self, lsp: LspManager | None = None, files: EditorFiles | None = None) -> None:
        self._lsp = lsp
        self._files = files

    def permission(self, params: WriteParams, ctx: ToolContext) -> PermissionRequest | None:
        """Every write needs a permission decision."""
        return path_permission(self.name, "write", params.path, ctx)

    async def run(self, params: WriteParams, ctx: ToolContext) -> ToolResult:
        """Write the file and report whether it was created, overwritten or already so."""
        path = ctx.resolve(params.path)
        shown_as = ctx.display_path(path)
        if self._files is None:
            result = await asyncio.to_thread(write_file, path, params.content, shown_as)
        else:
            result = await write_file_in_editor(self._files, path, params.content, shown_as)
        return (
            result
            if self._lsp is None
            else await self._lsp.annotate(result, path, shown_as, WithheldFilter("diagnostics", ctx))
        )


def write_file(path: Path, content: str, shown_as: str) -> ToolResult:
    """Write ``content`` to ``path`` as UTF-8 and describe what happened."""
    existed, previous = _existing(path, shown_as)
    if existed and previous == content:
        return _unchanged(path, content, shown_as)
    write_bytes(path, content.encode("utf-8"), shown_as)
    return _written(path, content, shown_as, existed, previous)


async def write_file_in_editor(files: EditorFiles, path: Path, content: str, shown_as: str) -> ToolResult:
    """:func:`write_file` through the editor: the diff is against its buffer, the write in its history."""
    existed, previous = await asyncio.to_thread(_existing, path, shown_as)
    if existed and previous is not None:
        with contextlib.suppress(Exception):  # the diff is only for the user: the disk's text does
            buffer = await files.read_text(path)
            previous = previous if buffer is None else buffer
    if existed and previous == content:
        return _unchanged(path, content, shown_as)
    await write_text(files, path, content, shown_as)
    return _written(path, content, shown_as, existed, previous)


def _existing(path: Path, shown_as: str) -> tuple[bool, str | None]:
    """Whether the file exists, and its text (None when it is not text to diff against)."""
    if path.is_dir():
        raise ToolError(f"{shown_as} is a directory; give the path of a file to write.")
    existed = path.exists()
    return existed, _previous_text(path) if existed else ""


def _metadata(path: Path, content: str, existed: bool) -> dict[str, object]:
    line_count = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    return {
        "path": str(path),
        "created": not existed,
        "bytes": len(content.encode("utf-8")),
        "lines": line_count,
    }


def _unchanged(path: Path, content: str, shown_as: str) -> ToolResult:
    return ToolResult(
        content=f"{shown_as} already has this content; nothing written.",
        metadata=_metadata(path, content, True),
    )


def _written(path: Path, content: str, shown_as: str, existed: bool, previous: str | None) -> ToolResult:
    metadata = _metadata(path, content, existed)
    if previous is not None:
        metadata["diff"] = unified_diff(previous, content, shown_as)
    verb = "Overwrote" if existed else "Created"
    return ToolResult(
        content=f"{verb} {shown_as} ({metadata['bytes']} bytes, {metadata['lines']} lines).",
        metadata=metadata,
    )


def _previous_text(path: Path) -> str | None:
    # Only for the diff shown to the user; a binary or huge file simply gets no diff (and a FIFO or
    # device none either: writing refuses it).
    try:
        return read_bounded_bytes(path, limit_bytes=MAX_TEXT_FILE_BYTES, whole=True).data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
