"""The ``symbols`` tool: the symbols of a file, or the project's symbols matching a name."""

from __future__ import annotations

from pydantic import BaseModel, Field

from nestor.core.errors import ToolError
from nestor.tools.base import ToolContext, ToolResult
from nestor.tools.lsp.results import Place, symbol_places
from nestor.tools.lsp.tool_base import LspTool, render_places


class SymbolsParams(BaseModel):
    """Arguments of the ``symbols`` tool."""

    path: str = Field(
        default="", description="A file to list the symbols of; empty to search the whole project by `query`."
    )
    query: str = Field(
        default="", description="Only symbols whose name contains this (required without `path`)."
    )


class SymbolsTool(LspTool[SymbolsParams]):
    """Lists a document's symbols, or searches the workspace's symbols by name."""

    name = "symbols"
    params_model = SymbolsParams

    async def run(self, params: SymbolsParams, ctx: ToolContext) -> ToolResult:
        """Ask the server for document or workspace symbols and list them as ``path:line: kind name``."""
        from lsprotocol import types  # only where a server runs: it costs start-up time

        query = params.query.strip()
        found: list[Place]
        notes: list[str] = []
        if params.path:
            path = ctx.resolve(params.path)
            answer = await self._lsp.ask(
                path,
                types.TEXT_DOCUMENT_DOCUMENT_SYMBOL,
                types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri())),
            )
            found = symbol_places(answer, default=path)
        elif not query:
            raise ToolError("give a `path` to list a file's symbols, or a `query` to search the project's.")
        else:
            answers, notes = await self._lsp.ask_all(
                types.WORKSPACE_SYMBOL, types.WorkspaceSymbolParams(query=query)
            )
            found = [place for answer in answers for place in symbol_places(answer)]
            if notes and not answers:
                raise ToolError("; ".join(notes) + ". Give a `path` for one file's symbols, or use grep.")
        if query:
            # A label is "kind Container.name": the query is matched against the name part alone.
            found = [place for place in found if query.lower() in place.label.rsplit(" ", 1)[-1].lower()]
        content, count = render_places(found, ctx, self.name, what="symbols")
        if notes:
            content += "\n(" + "; ".join(notes) + ".)"
        return ToolResult(content=content, metadata={"count": count})
