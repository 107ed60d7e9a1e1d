"""Files in user prompts (an editor's images) and models that cannot take them.

A prompt may carry images (pydantic-ai ``BinaryContent`` or ``ImageUrl``), stored and sent like any
content. Two cases need nestor's word:

- The model's profile says it takes no images (pydantic-ai's ``supports_image_input``; the
  embedded model's is off): :func:`check_prompt_files` refuses the prompt before anything is
  stored, with one line saying so.
- The profile says nothing against them but the provider rejects the request that carries them
  (a text-only model behind an OpenAI-compatible server): the run ends with the provider's error,
  and :func:`leave_out_files` replaces the files of the history held in memory by a note, so the
  session's next requests go without them. The store keeps them: a replay still shows the image.
"""

from __future__ import annotations

from dataclasses import replace

from pydantic_ai.exceptions import (
    ModelAuthenticationError,
    ModelContextWindowExceededError,
    ModelNotFoundError,
    ModelRequestRejectedError,
)
from pydantic_ai.messages import (
    BinaryContent,
    CachePoint,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    TextContent,
    UserContent,
    UserPromptPart,
)
from pydantic_ai.models import Model

from nestor.core.errors import ModelRequestError, NestorError
from nestor.core.prompts import UserPrompt

FILES_LEFT_OUT_HINT = (
    "the model may not take images: this session's next requests go without them; "
    "to send images, switch to a model that takes them"
)
"""The hint of a run whose request with files the provider rejected."""


def check_prompt_files(model: Model, model_name: str, prompt: UserPrompt) -> None:
    """Refuse a prompt with images for a model whose profile says it takes none.

    Raises:
        NestorError: The prompt has an image and the model takes no images.

    """
    if isinstance(prompt, str) or model.profile.get("supports_image_input", True):
        return
    if any(_is_image(item) for item in prompt):
        raise NestorError(
            f"the model {model_name} does not take images",
            hint="send the prompt without them, or switch to a model that takes images",
        )


def files_rejected(error: ModelRequestError) -> bool:
    """True when the provider rejected the request itself (not its size, key or model name)."""
    cause = error.__cause__
    return isinstance(cause, ModelRequestRejectedError) and not isinstance(
        cause, ModelContextWindowExceededError | ModelAuthenticationError | ModelNotFoundError
    )


def leave_out_files(history: list[ModelMessage]) -> bool:
    """Replace, in place, each file of the user prompts in ``history`` by a note naming it.

    Returns:
        True when a file was replaced.

    """
    replaced = False
    for index, message in enumerate(history):
        if not isinstance(message, ModelRequest):
            continue
        parts = [_without_files(part) if isinstance(part, UserPromptPart) else part for part in message.parts]
        if any(new is not old for new, old in zip(parts, message.parts, strict=True)):
            history[index] = replace(message, parts=parts)
            replaced = True
    return replaced


def _without_files(part: UserPromptPart) -> UserPromptPart:
    if isinstance(part.content, str) or all(_is_text(item) for item in part.content):
        return part
    content: list[UserContent] = [item if _is_text(item) else _note(item) for item in part.content]
    return replace(part, content=content)


def _note(item: UserContent) -> str:
    kind = getattr(item, "media_type", None) or type(item).__name__
    return f"[{kind} left out: the model did not take it]"


def _is_text(item: UserContent) -> bool:
    return isinstance(item, str | TextContent | CachePoint)


def _is_image(item: UserContent) -> bool:
    return isinstance(item, ImageUrl) or (isinstance(item, BinaryContent) and item.is_image)
