"""The ``hover`` tool: a symbol's type and documentation, from the language server.

A hover quotes where the symbol is defined (its signature, its docstring), so it passes the read
rules as that file: the server is asked for the definition too, and when a rule withholds the
file it is in (or the server cannot say where that is), the hover is left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nestor.core.errors import ToolError
from nestor.tools.base import ToolContext, ToolResult, WithheldFilter
from nestor.tools.lsp.results import hover_text, places
from nestor.tools.lsp.tool_base import LspTool, SymbolAt, position

MAX_HOVER_CHARS = 4000


class HoverTool(LspTool[SymbolAt]):
    """Shows what the server knows of the symbol at a place: its signature, type and docs."""

    name = "hover"
    params_model = SymbolAt

    async def run(self, params: SymbolAt, ctx: ToolContext) -> ToolResult:
        """Ask the server for the hover text; show it when the read rules let its source be read."""
        from lsprotocol import types  # only where a server runs: it costs start-up time

        path = ctx.resolve(params.path)
        shown_as = ctx.display_path(path)
        line, column = position(path, shown_as, params.line, params.symbol)
        document = types.TextDocumentIdentifier(uri=path.as_uri())
        at = types.Position(line=line, character=column)
        answer = await self._lsp.ask(
            path, types.TEXT_DOCUMENT_HOVER, types.HoverParams(text_document=document, position=at)
        )
        text = hover_text(answer)
        header = f"{shown_as}:{params.line}: {params.symbol or 'the first word'}"
        metadata = {"path": str(path)}
        if not text:
            return ToolResult(content=f"{header}: the server knows nothing about it.", metadata=metadata)
        definition = types.DefinitionParams(text_document=document, position=at)
        withheld = await self._withheld_source(path, types.TEXT_DOCUMENT_DEFINITION, definition, ctx)
        if withheld:
            return ToolResult(content=f"{header}: not shown: {withheld}.", metadata=metadata)
        if len(text) > MAX_HOVER_CHARS:
            text = f"{text[:MAX_HOVER_CHARS]}… (cut)"
        return ToolResult(content=f"{header}\n{text}", metadata=metadata)

    async def _withheld_source(self, path: Path, method: str, params: Any, ctx: ToolContext) -> str:
        """Why the hover may not be shown, "" when it may (its definition is in no withheld file)."""
        try:
            answer = await self._lsp.ask(path, method, params)
        except ToolError:
            return "the server did not say where it is defined, so the permission rules cannot be checked"
        visible = WithheldFilter(self.name, ctx)
        if all([visible(place.path) for place in places(answer)]):
            return ""
        return "it is defined in a file the permission rules withhold"
