"""The ``references`` tool: where a symbol is used, from the language server."""

from __future__ import annotations

from typing import Any

from nestor.tools.lsp.tool_base import PlacesTool


class ReferencesTool(PlacesTool):
    """Lists every place the symbol at a place is used, its definition included."""

    name = "references"
    what = "references"

    def request(self, uri: str, line: int, column: int) -> tuple[str, Any]:
        """``textDocument/references`` at the place, the declaration included."""
        from lsprotocol import types  # only where a server runs: it costs start-up time

        return types.TEXT_DOCUMENT_REFERENCES, types.ReferenceParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=column),
            context=types.ReferenceContext(include_declaration=True),
        )
