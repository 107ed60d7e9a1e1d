"""The ``view`` tool: read a text file with line numbers, a window at a time."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from nestor.core.errors import ToolError
from nestor.tools._text import read_text_file, split_lines
from nestor.tools.base import Tool, ToolContext, ToolResult, WithheldFilter
from nestor.tools.editor_files import EditorFiles, editor_text
from nestor.tools.ls import LsParams, LsTool

if TYPE_CHECKING:
    from nestor.tools.lsp.manager import LspManager

DEFAULT_LINE_LIMIT = 2000
MAX_LINE_CHARS = 2000
# A window of 2000 long lines would swamp the context; stop early and say where to go on.
MAX_OUTPUT_CHARS = 256_000
LINE_NUMBER_WIDTH = 6


class ViewParams(BaseModel):
    """Arguments of the ``view`` tool."""

    path: str = Field(description="The file to read: absolute, or relative to the project root.")
    offset: int = Field(
        default=0, ge=0, description="The line to start at, counted from 0 (0 is the first line)."
    )
    limit: int = Field(
        default=DEFAULT_LINE_LIMIT, ge=1, description="The most lines to return (default 2000)."
    )


class ViewTool(Tool[ViewParams]):
    """Reads a UTF-8 text file and returns a window of its lines, numbered like ``cat -n``.

    Args:
        files: The editor nestor runs in, whose unsaved buffers a read sees; None reads the disk.

    """

    name = "view"
    params_model = ViewParams

    def __init__(self, files: EditorFiles | None = None) -> None:
        self._files = files

    async def run(self, params: ViewParams, ctx: ToolContext) -> ToolResult:
        """Read the file and render the requested lines, with a footer when more remain."""
        path = ctx.resolve(params.path)
        shown_as = ctx.display_path(path)
        if path.is_dir():
            # Models (small ones most of all) view a directory to see what is in it: show them.
            listing = await LsTool().run(LsParams(path=params.path), ctx)
            note = f"({shown_as} is a directory; it is listed here as the ls tool lists it.)"
            return ToolResult(
                content=f"{note}\n{listing.content}", metadata={**listing.metadata, "directory": True}
            )
        text_file = await editor_text(
            self._files, path, await asyncio.to_thread(read_text_file, path, shown_as)
        )
        lines = split_lines(text_file.text)
        total = len(lines)
        metadata: dict[str, object] = {"path": str(path), "total_lines": total}
        if total == 0:
            return ToolResult(content=f"({shown_as} is empty.)", metadata={**metadata, "lines_shown": 0})
        if params.offset >= total:
            raise ToolError(
                f"offset {params.offset} is past the end of {shown_as}, which has {total} lines; "
                f"use an offset below {total}."
            )
        rendered, next_offset = render_lines(lines, params.offset, params.limit)
        shown = next_offset - params.offset
        if next_offset < total:
            rendered.append(
                f"\n(Showing lines {params.offset + 1}-{next_offset} of {total}. "
                f"To read on, call view with offset={next_offset}.)"
            )
        return ToolResult(content="\n".join(rendered), metadata={**metadata, "lines_shown": shown})


class ViewWithDiagnosticsParams(ViewParams):
    """Arguments of ``view`` where a language server runs."""

    diagnostics: bool = Field(
        default=False,
        description="True to add the file's current errors and warnings from the language server.",
    )


class DiagnosingViewTool(ViewTool):
    """``view`` where a language server runs: it starts the server of what it reads, and reports diagnostics.

    Built instead of :class:`ViewTool` only then, so elsewhere the model sees ``view`` as ever.
    """

    params_model = ViewWithDiagnosticsParams

    def __init__(self, lsp: LspManager, files: EditorFiles | None = None) -> None:
        super().__init__(files)
        self._lsp = lsp

    @property
    def description(self) -> str:
        """View's description, with its ``diagnostics`` argument."""
        return (
            f"{super().description}\n- `diagnostics`: true adds the file's current errors and warnings "
            "from the language server."
        )

    async def run(self, params: ViewParams, ctx: ToolContext) -> ToolResult:
        """Read the file; start its language server in the background; add diagnostics on request."""
        result = await super().run(params, ctx)
        path = ctx.resolve(params.path)
        if result.metadata.get("directory"):
            return result
        self._lsp.warm(path)  # the model usually reads before it edits: the server is up by then
        if isinstance(params, ViewWithDiagnosticsParams) and params.diagnostics:
            from nestor.tools.lsp.diagnostics import render_diagnostics

            problems = await self._lsp.file_diagnostics(path)
            visible = WithheldFilter("diagnostics", ctx)
            rendered = render_diagnostics({path: problems}, ctx, visible)
            note = visible.note()
            result.content += "\n\nDiagnostics:\n" + rendered + (f"\n{note}" if note else "")
        return result


def render_lines(lines: list[str], offset: int, limit: int) -> tuple[list[str], int]:
    """Number ``lines[offset:offset + limit]``, truncating long lines and stopping at the output cap.

    Returns:
        The rendered lines and the 0-based index of the first line not rendered.

    """
    rendered: list[str] = []
    used_chars = 0
    end = min(len(lines), offset + limit)
    for index in range(offset, end):
        line = lines[index]
        if len(line) > MAX_LINE_CHARS:
            line = f"{line[:MAX_LINE_CHARS]}… [line truncated: {len(line)} characters in all]"
        numbered = f"{index + 1:>{LINE_NUMBER_WIDTH}}\t{line}"
        used_chars += len(numbered) + 1
        if rendered and used_chars > MAX_OUTPUT_CHARS:
            return rendered, index
        rendered.append(numbered)
    return rendered, end
