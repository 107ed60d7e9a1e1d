"""The ``hover`` tool: a symbol's type and documentation, from the language server."""

from __future__ import annotations

from nestor.tools.base import ToolContext, ToolResult
from nestor.tools.lsp.results import hover_text
from nestor.tools.lsp.tool_base import LspTool, SymbolAt, position

MAX_HOVER_CHARS = 4000


class HoverTool(LspTool[SymbolAt]):
    """Shows what the server knows of the symbol at a place: its signature, type and docs."""

    name = "hover"
    params_model = SymbolAt

    async def run(self, params: SymbolAt, ctx: ToolContext) -> ToolResult:
        """Ask the server for the hover text."""
        from lsprotocol import types  # only where a server runs: it costs start-up time

        path = ctx.resolve(params.path)
        shown_as = ctx.display_path(path)
        line, column = position(path, shown_as, params.line, params.symbol)
        answer = await self._lsp.ask(
            path,
            types.TEXT_DOCUMENT_HOVER,
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
                position=types.Position(line=line, character=column),
            ),
        )
        text = hover_text(answer)
        if len(text) > MAX_HOVER_CHARS:
            text = f"{text[:MAX_HOVER_CHARS]}… (cut)"
        header = f"{shown_as}:{params.line}: {params.symbol or 'the first word'}"
        return ToolResult(
            content=f"{header}\n{text}" if text else f"{header}: the server knows nothing about it.",
            metadata={"path": str(path)},
        )
