"""The ``hover`` tool: a symbol's type and documentation, from the language server.

A hover quotes what the server inferred of the symbol (its signature, its docstring, its literal
type), from whatever files it read. It is shown only while the project holds no file of the
servers' languages the read rules withhold (:mod:`nestor.tools.lsp.withheld_sources`), and when
the server names where the symbol is defined, in a file the rules let be read (outside the
project, say): a definition it cannot place is not shown either.
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
        visible = WithheldFilter(self.name, ctx)
        withheld = self._lsp.withheld_source(visible)
        if not withheld:
            definition = types.DefinitionParams(text_document=document, position=at)
            withheld = await self._withheld_definition(path, definition, visible)
        if withheld:
            return ToolResult(content=f"{header}: not shown: {withheld}.", metadata=metadata)
        if len(text) > MAX_HOVER_CHARS:
            text = f"{text[:MAX_HOVER_CHARS]}… (cut)"
        return ToolResult(content=f"{header}\n{text}", metadata=metadata)

    async def _withheld_definition(self, path: Path, params: Any, visible: WithheldFilter) -> str:
        """Why the hover may not be shown, "" when it may (it is defined in files the rules let be read)."""
        unknown = "the server did not say where it is defined, so the permission rules cannot be checked"
        try:
            found = places(await self._lsp.ask(path, "textDocument/definition", params))
        except ToolError:
            return unknown
        if not found:
            return unknown
        if all([visible(place.path) for place in found]):
            return ""
        return "it is defined in a file the permission rules withhold"
