"""An MCP tool's result as nestor's: text for the model, files for what text cannot carry.

Text blocks are the text. Images, audio and binary resources are written to the session's scratch
directory (the model is told the path and type, and may read it back); an embedded text resource
is its text under its URI; a resource link is its URI. Structured content is shown as JSON when no
text block says it already (servers often send both). Large results go to a file afterwards, as
every tool's do (``runtime/features/large_results.py``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import mimetypes
from pathlib import Path
from typing import Any

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from nestor.tools.base import ToolResult


def to_tool_result(result: CallToolResult, scratch_dir: Path | None, *, server: str, tool: str) -> ToolResult:
    """``result`` as a :class:`ToolResult`; binary parts saved under ``scratch_dir``/mcp."""
    parts: list[str] = []
    files: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            kind = "image" if isinstance(block, ImageContent) else "audio"
            parts.append(_saved(block.data, block.mime_type, kind, scratch_dir, files))
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(f"[resource {resource.uri}]\n{resource.text}")
            elif isinstance(resource, BlobResourceContents):
                mime = resource.mime_type or "application/octet-stream"
                parts.append(
                    f"[resource {resource.uri}] "
                    + _saved(resource.blob, mime, "resource", scratch_dir, files)
                )
        elif isinstance(block, ResourceLink):
            parts.append(f"[resource link {block.uri}{f' ({block.name})' if block.name else ''}]")
    structured: Any = result.structured_content
    if structured is not None and not _said(structured, parts):
        parts.append(json.dumps(structured, indent=2, ensure_ascii=False))
    text = "\n\n".join(parts) if parts else f"({tool} of MCP server {server} returned nothing)"
    metadata: dict[str, Any] = {"mcp_server": server, "mcp_tool": tool}
    if files:
        metadata["files"] = files
    return ToolResult(text, is_error=bool(result.is_error), metadata=metadata)


def _said(structured: Any, parts: list[str]) -> bool:
    """Whether a text block already carries the structured content (MCPServer sends both)."""
    if isinstance(structured, dict) and set(structured) == {"result"}:  # pyright: ignore[reportUnknownArgumentType]
        value: Any = structured["result"]
        if isinstance(value, str) and value in parts:
            return True
    for part in parts:
        try:
            if json.loads(part) == structured:
                return True
        except ValueError:
            continue
    return False


def _saved(data: str, mime: str, kind: str, scratch_dir: Path | None, files: list[str]) -> str:
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"[{kind} {mime}: not valid base64, left out]"
    if scratch_dir is None:
        return f"[{kind} {mime}, {len(raw):,} bytes: not shown]"
    folder = scratch_dir / "mcp"
    folder.mkdir(parents=True, exist_ok=True)
    extension = mimetypes.guess_extension(mime) or ".bin"
    path = folder / f"{kind}-{hashlib.sha256(raw).hexdigest()[:16]}{extension}"
    path.write_bytes(raw)
    files.append(str(path))
    return f"[{kind} {mime}, {len(raw):,} bytes, saved to {path}]"
