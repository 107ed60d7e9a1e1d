"""The ``definition`` tool: where a symbol is defined, from the language server."""

from __future__ import annotations

from typing import Any

from nestor.tools.lsp.tool_base import PlacesTool


class DefinitionTool(PlacesTool):
    """Finds where the symbol at a place is defined."""

    name = "definition"
    what = "definition"

    def request(self, uri: str, line: int, column: int) -> tuple[str, Any]:
        """``textDocument/definition`` at the place."""
        from lsprotocol import types  # only where a server runs: it costs start-up time

        return types.TEXT_DOCUMENT_DEFINITION, types.DefinitionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=column),
        )
