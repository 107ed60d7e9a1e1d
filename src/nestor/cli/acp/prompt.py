"""An ACP prompt (content blocks) as the text nestor's main agent gets, and the slash commands.

Text is the prompt; an embedded resource (a file or selection the editor attached) is context,
given whole with its URI; a resource link names a file the agent may read with its tools (the
rules decide, as for any read). Binary content is named, not sent: nestor's agents take text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlparse

from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    UnstructuredCommandInput,
)

COMMANDS: dict[str, tuple[str, str | None]] = {
    "compact": ("summarise the older conversation to free context", "what the summary should keep"),
    "cost": ("tokens and cost of this session so far, sub-agents included", None),
    "session": ("id, title and model of this session", None),
}
"""The slash commands nestor answers over ACP: name -> (description, input hint)."""


def commands_update() -> AvailableCommandsUpdate:
    """The ``available_commands_update`` naming :data:`COMMANDS`."""
    commands = [
        AvailableCommand(
            name=name,
            description=description,
            input=AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)) if hint else None,
        )
        for name, (description, hint) in COMMANDS.items()
    ]
    return AvailableCommandsUpdate(session_update="available_commands_update", available_commands=commands)


def slash_command(text: str) -> tuple[str, str] | None:
    """``("compact", "the API")`` for ``/compact the API``; None when ``text`` is no known command."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    name, _, rest = stripped[1:].partition(" ")
    return (name, rest.strip()) if name in COMMANDS else None


def prompt_text(blocks: Sequence[Any]) -> str:
    """The prompt nestor's agent gets for ``blocks``."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"[{block.name}]({_path_or_uri(block.uri)})")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            where = _path_or_uri(resource.uri)
            if isinstance(resource, BlobResourceContents):
                parts.append(f"(attached: {where}, {resource.mime_type or 'binary'}, not shown)")
            else:
                parts.append(f'<context source="{where}">\n{resource.text}\n</context>')
        else:
            kind = getattr(block, "type", "content")
            parts.append(f"(attached: {kind} content, which nestor's agents cannot read)")
    return "\n".join(part for part in parts if part)


def _path_or_uri(uri: str) -> str:
    """A ``file://`` URI as its path (the agent's tools take paths); any other URI as it is."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri
