"""An ACP prompt (content blocks) as the prompt nestor's main agent gets, and the slash commands.

Text is the prompt; an image is sent to the model as it came (pydantic-ai ``BinaryContent``); an
embedded resource (a file or selection the editor attached) is context, given whole with its URI,
or as an image when it is one; a resource link names a file the agent may read with its tools (the
rules decide, as for any read). Other binary content (audio, a binary file) is named, not sent.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlparse

import acp
from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
    UnstructuredCommandInput,
)

from nestor.core.prompts import UserPrompt

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


MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""The largest image a prompt may carry (the providers' own limits are 5 to 20 MB)."""


def prompt_content(blocks: Sequence[Any]) -> UserPrompt:
    """The prompt nestor's agent gets for ``blocks``: its text, or its text and images in order.

    Raises:
        acp.RequestError: An image is not base64, empty, not an image, or larger than :data:`MAX_IMAGE_BYTES`.

    """
    items: list[Any] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            items.append(block.text)
        elif isinstance(block, ImageContentBlock):
            if block.uri:
                items.append(f"(image: {_path_or_uri(block.uri)})")
            items.append(_image(block.data, block.mime_type, block.uri or "an image block"))
        elif isinstance(block, ResourceContentBlock):
            items.append(f"[{block.name}]({_path_or_uri(block.uri)})")
        elif isinstance(block, EmbeddedResourceContentBlock):
            items += _resource(block.resource)
        else:
            kind = getattr(block, "type", "content")
            items.append(f"(attached: {kind} content, which nestor's agents cannot read)")
    return _joined(items)


def _resource(resource: TextResourceContents | BlobResourceContents) -> list[Any]:
    where = _path_or_uri(resource.uri)
    if isinstance(resource, TextResourceContents):
        return [f'<context source="{where}">\n{resource.text}\n</context>']
    mime_type = resource.mime_type or mimetypes.guess_type(where)[0] or ""
    if not mime_type.startswith("image/"):
        return [f"(attached: {where}, {mime_type or 'binary'}, not shown)"]
    return [f"(attached: {where})", _image(resource.blob, mime_type, where)]


def _image(data: str, mime_type: str, where: str) -> Any:
    """An image block's base64 data as the ``BinaryContent`` the model gets."""
    from pydantic_ai.messages import BinaryContent  # the runtime's: loaded with the first session

    if not mime_type.startswith("image/"):
        raise acp.RequestError.invalid_params({"prompt": f"{where}: {mime_type!r} is not an image type"})
    if len(data) * 3 // 4 > MAX_IMAGE_BYTES:
        raise acp.RequestError.invalid_params(
            {"prompt": f"{where}: the image is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB"}
        )
    try:
        decoded = base64.b64decode(data, validate=True)
    except binascii.Error:
        raise acp.RequestError.invalid_params({"prompt": f"{where}: the image data is not base64"}) from None
    if not decoded:
        raise acp.RequestError.invalid_params({"prompt": f"{where}: the image has no data"})
    return BinaryContent(data=decoded, media_type=mime_type)


def _joined(items: list[Any]) -> UserPrompt:
    """Adjacent texts as one (a line each, empty ones left out); the text alone when nothing else came."""
    merged: list[Any] = []
    for item in items:
        if isinstance(item, str) and merged and isinstance(merged[-1], str):
            merged[-1] = "\n".join(text for text in (merged[-1], item) if text)
        else:
            merged.append(item)
    merged = [item for item in merged if not isinstance(item, str) or item]
    if not merged:
        return ""
    return merged[0] if len(merged) == 1 and isinstance(merged[0], str) else merged


def _path_or_uri(uri: str) -> str:
    """A ``file://`` URI as its path (the agent's tools take paths); any other URI as it is."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri
