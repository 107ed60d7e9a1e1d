"""A user's prompt: text, or text with images and other content, as pydantic-ai sends it to a model.

A prompt is stored as a pydantic-ai ``UserPromptPart`` whose content is this value, so it is kept
and replayed like any message. Most prompts are plain text (``nestor run``, the REPL); an editor
(``nestor acp``) may attach images as ``BinaryContent``. Whatever reads only text (titles, the
small-model harness, queued-prompt events) takes :func:`prompt_text`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from pydantic_ai.messages import UserContent

UserPrompt: TypeAlias = "str | Sequence[UserContent]"
"""A prompt: its text, or a sequence of pydantic-ai user content (text, ``BinaryContent``, ...)."""


def prompt_text(prompt: UserPrompt, *, name_files: bool = False) -> str:
    """The text of ``prompt``: its text items in order, one per line.

    Args:
        prompt: The prompt.
        name_files: Put a short line in place of each file (``[image/png]``, ``[image: URL]``),
            for listings a person reads; without it, files are left out.

    """
    if isinstance(prompt, str):
        return prompt
    # Loaded only for prompts with content beyond text, which come with the runtime loaded.
    from pydantic_ai.messages import BinaryContent, CachePoint, FileUrl, TextContent

    lines: list[str] = []
    for item in prompt:
        if isinstance(item, str):
            lines.append(item)
        elif isinstance(item, TextContent):
            lines.append(item.content)
        elif not name_files or isinstance(item, CachePoint):
            continue
        elif isinstance(item, BinaryContent):
            lines.append(f"[{item.media_type}]")
        elif isinstance(item, FileUrl):
            lines.append(f"[{item.kind.removesuffix('-url')}: {item.url}]")
        else:
            lines.append(f"[{type(item).__name__}]")
    return "\n".join(lines)
