"""The ``write`` tool: create or overwrite a file with the given content."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from nestor.core.errors import ToolError
from nestor.core.files import read_bounded_bytes
from nestor.tools._text import MAX_TEXT_FILE_BYTES, unified_diff, write_bytes
from nestor.tools.base import PermissionRequest, Tool, ToolContext, ToolResult, path_permission

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

    def __init__(self, lsp: LspManager | None = None) -> None:
        self._lsp = lsp

    def permission(self, params: WriteParams, ctx: ToolContext) -> PermissionRequest | None:
        """Every write needs a permission decision."""
        return path_permission(self.name, "write", params.path, ctx)

    async def run(self, params: WriteParams, ctx: ToolContext) -> ToolResult:
        """Write the file and report whether it was created, overwritten or already so."""
        path = ctx.resolve(params.path)
        shown_as = ctx.display_path(path)
        result = await asyncio.to_thread(write_file, path, params.content, shown_as)
        return result if self._lsp is None else await self._lsp.annotate(result, path, shown_as)


def write_file(path: Path, content: str, shown_as: str) -> ToolResult:
    """Write ``content`` to ``path`` as UTF-8 and describe what happened."""
    if path.is_dir():
        raise ToolError(f"{shown_as} is a directory; give the path of a file to write.")
    data = content.encode("utf-8")
    line_count = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    existed = path.exists()
    previous = _previous_text(path) if existed else ""
    metadata: dict[str, object] = {
        "path": str(path),
        "created": not existed,
        "bytes": len(data),
        "lines": line_count,
    }
    if existed and previous == content:
        return ToolResult(content=f"{shown_as} already has this content; nothing written.", metadata=metadata)
    write_bytes(path, data, shown_as)
    if previous is not None:
        metadata["diff"] = unified_diff(previous, content, shown_as)
    verb = "Overwrote" if existed else "Created"
    return ToolResult(
        content=f"{verb} {shown_as} ({len(data)} bytes, {line_count} lines).",
        metadata=metadata,
    )


def _previous_text(path: Path) -> str | None:
    # Only for the diff shown to the user; a binary or huge file simply gets no diff (and a FIFO or
    # device none either: writing refuses it).
    try:
        return read_bounded_bytes(path, limit_bytes=MAX_TEXT_FILE_BYTES, whole=True).data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
