"""What the code-intelligence tools share: a place given as a line and a name, and answers as ``path:line``.

Models count lines well and columns badly, so a position is a 1-based line and the symbol's name
on it; the column is found here. Answers read like grep's: ``path:line: text``, capped, with the
files the permission rules withhold left out.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, Field

from nestor.core.errors import ToolError
from nestor.tools._text import read_text_file, split_lines
from nestor.tools.base import Tool, ToolContext, ToolResult, WithheldFilter
from nestor.tools.lsp.manager import LspManager
from nestor.tools.lsp.results import Place, places

MAX_PLACES = 100
MAX_LINE_CHARS = 200


class SymbolAt(BaseModel):
    """Arguments naming a symbol by where it is written."""

    path: str = Field(description="The file the symbol is in: absolute, or relative to the project root.")
    line: int = Field(ge=1, description="The line it is on, counted from 1 (as view and grep number lines).")
    symbol: str = Field(
        default="",
        description="The symbol's name as written on that line (e.g. parse_config); empty for the "
        "line's first word.",
    )


ParamsT = TypeVar("ParamsT", bound=BaseModel)


class LspTool(Tool[ParamsT]):
    """A tool answered by the project's language servers.

    Args:
        lsp: The project's language servers.

    """

    def __init__(self, lsp: LspManager) -> None:
        self._lsp = lsp


class PlacesTool(LspTool[SymbolAt]):
    """A tool that asks about the symbol at a place and answers with places (definition, references)."""

    params_model = SymbolAt
    what: ClassVar[str]
    """What the places are, for "No ... found"."""

    @abstractmethod
    def request(self, uri: str, line: int, column: int) -> tuple[str, Any]:
        """The method and the params to send for the symbol at ``line``, ``column`` (0-based) of ``uri``."""

    async def run(self, params: SymbolAt, ctx: ToolContext) -> ToolResult:
        """Ask the server and list the places it gives as ``path:line: text``."""
        path = ctx.resolve(params.path)
        line, column = position(path, ctx.display_path(path), params.line, params.symbol)
        method, request = self.request(path.as_uri(), line, column)
        answer = await self._lsp.ask(path, method, request)
        content, count = render_places(places(answer), ctx, self.name, what=self.what)
        return ToolResult(content=content, metadata={"path": str(path), "count": count})


def position(path: Path, shown_as: str, line: int, symbol: str) -> tuple[int, int]:
    """The 0-based line and UTF-16 column of ``symbol`` on 1-based ``line`` of ``path``.

    Raises:
        ToolError: The file has no such line, or the symbol is not on it.

    """
    lines = split_lines(read_text_file(path, shown_as).text)
    if line > len(lines):
        raise ToolError(f"{shown_as} has {len(lines)} lines, so there is no line {line}.")
    text = lines[line - 1]
    if symbol.strip():
        found = re.search(rf"(?<![\w]){re.escape(symbol.strip())}(?![\w])", text)
        index = found.start() if found else text.find(symbol.strip())
        if index < 0:
            raise ToolError(
                f"{symbol.strip()!r} is not on line {line} of {shown_as}, which reads: "
                f"{text.strip()[:MAX_LINE_CHARS]!r}. Give the line where the name is written (grep finds it)."
            )
    else:
        index = len(text) - len(text.lstrip())
    return line - 1, len(text[:index].encode("utf-16-le")) // 2


def render_places(places: Sequence[Place], ctx: ToolContext, tool_name: str, *, what: str) -> tuple[str, int]:
    """``path:line: text`` for each place (the text is the file's line, or the place's label).

    Returns the text and how many places were shown.
    """
    shown_ok = WithheldFilter(tool_name, ctx)
    lines: list[str] = []
    cache: dict[Path, list[str]] = {}
    unique = list(dict.fromkeys((place.path, place.line, place.label) for place in places))
    kept = [entry for entry in unique if shown_ok(entry[0])]
    for path, line, label in kept[:MAX_PLACES]:
        text = label or _line_text(path, line, cache)
        lines.append(f"{ctx.display_path(path)}:{line + 1}: {text}".rstrip())
    if not kept:
        lines.append(f"No {what} found.")
    elif len(kept) > MAX_PLACES:
        lines.append(f"… {len(kept) - MAX_PLACES} more {what} not shown.")
    note = shown_ok.note()
    if note:
        lines.append(note)
    return "\n".join(lines), min(len(kept), MAX_PLACES)


def _line_text(path: Path, line: int, cache: dict[Path, list[str]]) -> str:
    if path not in cache:
        try:
            cache[path] = split_lines(read_text_file(path, str(path)).text)
        except ToolError:
            cache[path] = []
    lines = cache[path]
    text = lines[line].strip() if line < len(lines) else ""
    return text if len(text) <= MAX_LINE_CHARS else f"{text[:MAX_LINE_CHARS]}…"
