"""What language servers answer, read from their JSON into short ``path:line`` text.

Servers differ in shape (a location or a list, links or locations, hierarchical or flat symbols,
markup or marked strings), so answers are read field by field rather than structured whole.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

SEVERITIES = {1: "error", 2: "warning", 3: "info", 4: "hint"}
SYMBOL_KINDS = {
    1: "file", 2: "module", 3: "namespace", 4: "package", 5: "class", 6: "method", 7: "property",
    8: "field", 9: "constructor", 10: "enum", 11: "interface", 12: "function", 13: "variable",
    14: "constant", 15: "string", 16: "number", 17: "boolean", 18: "array", 19: "object", 20: "key",
    21: "null", 22: "enum member", 23: "struct", 24: "event", 25: "operator", 26: "type parameter",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem a server reports in a document (line and character 0-based).

    ``related`` are the files its related information points at (where a type it quotes is
    declared, say): a problem naming a file the read rules withhold is left out with that file.
    """

    line: int
    character: int
    severity: int
    message: str
    source: str = ""
    code: str = ""
    related: tuple[Path, ...] = ()

    @property
    def key(self) -> tuple[int, str, str]:
        """What makes it the same problem after lines moved: severity, message and code."""
        return (self.severity, self.message, self.code)

    def render(self, shown_as: str) -> str:
        """``path:line:col: error: message (source)``."""
        source = f" ({self.source})" if self.source else ""
        severity = SEVERITIES.get(self.severity, "error")
        return f"{shown_as}:{self.line + 1}:{self.character + 1}: {severity}: {self.message}{source}"


def shown_problems(problems: list[Diagnostic], shown: Callable[[Path], bool]) -> list[Diagnostic]:
    """The problems that name no file ``shown`` withholds (in their related information)."""
    return [problem for problem in problems if all(shown(path) for path in problem.related)]


@dataclass(frozen=True, slots=True)
class Place:
    """A place in a file a server pointed at (line 0-based), with what it is when known."""

    path: Path
    line: int
    label: str = ""


def plain(value: Any) -> Any:
    """``value`` as plain JSON types (pygls may hand back named tuples for objects)."""
    as_dict = getattr(value, "_asdict", None)
    if callable(as_dict):
        value = as_dict()
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def uri_to_path(uri: str) -> Path | None:
    """The real path of a ``file:`` URI, None for another scheme.

    Links are resolved: the read rules judge the file where it is, and it is read there.
    """
    parts = urlsplit(uri)
    return Path(os.path.realpath(unquote(parts.path))) if parts.scheme == "file" else None


def _line_of(item: dict[str, Any], key: str = "range") -> int:
    span = item.get(key)
    start = span.get("start") if isinstance(span, dict) else None
    line = start.get("line") if isinstance(start, dict) else None
    return line if isinstance(line, int) else 0


def places(result: Any) -> list[Place]:
    """The places of a definition or references answer (a location, a list of them, or links)."""
    items: list[Any] = result if isinstance(result, list) else [result] if isinstance(result, dict) else []
    found: list[Place] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        uri = item.get("uri") or item.get("targetUri")
        path = uri_to_path(uri) if isinstance(uri, str) else None
        if path is not None:
            line = _line_of(item, "range" if "uri" in item else "targetSelectionRange")
            found.append(Place(path, line))
    return found


def symbol_places(result: Any, default: Path | None = None) -> list[Place]:
    """The symbols of a document or workspace symbol answer, nested ones flattened with their container."""
    found: list[Place] = []

    def walk(items: Iterable[Any], container: str) -> None:
        for item in items:
            if not isinstance(item, dict):
                continue
            name = str(item.get("name", "?"))
            kind = SYMBOL_KINDS.get(item.get("kind", 0), "symbol")
            location = item.get("location")
            if isinstance(location, dict):
                uri = location.get("uri")
                path = uri_to_path(uri) if isinstance(uri, str) else None
                line = _line_of(location)
            else:
                path, line = default, _line_of(item, "selectionRange")
            shown = item.get("containerName") or container
            if path is not None:
                found.append(Place(path, line, f"{kind} {shown}.{name}" if shown else f"{kind} {name}"))
            children = item.get("children")
            if isinstance(children, list):
                walk(children, f"{container}.{name}" if container else name)  # pyright: ignore[reportUnknownArgumentType]

    walk(result if isinstance(result, list) else [], "")
    return found


def hover_text(result: Any) -> str:
    """The text of a hover answer (markup, a marked string, or a list of them)."""
    if not isinstance(result, dict):
        return ""
    contents = result.get("contents")
    parts: list[Any] = contents if isinstance(contents, list) else [contents]
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("value"), str):
            value: str = part["value"]
            language = part.get("language")
            texts.append(f"```{language}\n{value}\n```" if isinstance(language, str) else value)
    return "\n\n".join(text.strip() for text in texts if text.strip())
