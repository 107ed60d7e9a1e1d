"""Turn pydantic-ai messages into a local model's prompt, with the model's own chat template.

Everything here is pure and engine-independent: the llama.cpp engine and the pydantic-ai ``Model``
subclass use it, and nothing in it loads a model.

- :func:`to_chat_messages` maps a pydantic-ai history to the OpenAI-style dicts Hugging Face chat
  templates expect (``system``, ``user``, ``assistant`` with ``tool_calls``, ``tool``).
- :class:`ChatTemplate` renders those dicts with the model's own Jinja chat template (from the GGUF),
  in the same sandbox and with the same helpers ``transformers`` gives templates.

Reading tool calls back out of the model's text is :mod:`nestor.providers.local.tool_calls`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.parser import Parser
from jinja2.sandbox import ImmutableSandboxedEnvironment
from pydantic_ai.messages import (
    AudioUrl,
    BaseToolReturnPart,
    BinaryContent,
    CachePoint,
    CompactionPart,
    DocumentUrl,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    RetryFeedbackPart,
    RetryPromptPart,
    SpeechPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ToolCallPart,
    UserContent,
    UserPromptPart,
    VideoUrl,
)
from pydantic_ai.tools import ToolDefinition

from nestor.core.errors import ProviderError

__all__ = ["ChatTemplate", "to_chat_messages", "tools_for_template"]

_TEMPLATE_HINT = "use a GGUF whose metadata has a working chat template, or report this model's template"

# -- pydantic-ai messages -> chat dicts ------------------------------------------------------------


def to_chat_messages(messages: Sequence[ModelMessage], instructions: str | None) -> list[dict[str, Any]]:
    """Map a pydantic-ai history to the OpenAI-style message dicts chat templates expect.

    The system message is ``instructions`` followed by the ``SystemPromptPart``s that lead the
    history. A system prompt later in the history (nestor's ``<system-reminder>``s) becomes a
    ``user`` message, since many templates accept a system message only first. Adjacent ``user``
    messages are merged in order, for templates that insist on alternating roles. Thinking, files
    and another provider's server-side tool parts are dropped from responses; images and other
    files in prompts become a one-line placeholder. Tool-call arguments are dicts
    (templates apply ``tojson`` to them); arguments that are not valid JSON travel as
    ``{"INVALID_JSON": "<raw>"}``, pydantic-ai's own convention, so the call keeps its shape.
    """
    builder = _ChatBuilder()
    if instructions:
        builder.system(instructions)
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                _add_request_part(builder, part)
        else:
            texts = [part.content for part in message.parts if isinstance(part, TextPart | SpeechPart)]
            calls = [_tool_call(part) for part in message.parts if isinstance(part, ToolCallPart)]
            builder.assistant("\n\n".join(text for text in texts if text), calls)
    return builder.messages


class _ChatBuilder:
    """Collects chat dicts, folding leading system text and merging adjacent user turns."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def system(self, content: str) -> None:
        if not self.messages:
            self.messages.append({"role": "system", "content": content})
        elif len(self.messages) == 1 and self.messages[0]["role"] == "system":
            self.messages[0]["content"] += "\n\n" + content
        else:
            self.user(content)

    def user(self, content: str) -> None:
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == "user":
            last["content"] += "\n\n" + content
        else:
            self.messages.append({"role": "user", "content": content})

    def assistant(self, content: str, calls: list[dict[str, Any]]) -> None:
        if not content and not calls:
            return  # a response of thinking only: nothing a template could show
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        self.messages.append(message)

    def tool(self, content: str, *, tool_call_id: str, name: str) -> None:
        self.messages.append({"role": "tool", "content": content, "tool_call_id": tool_call_id, "name": name})


def _add_request_part(builder: _ChatBuilder, part: ModelRequestPart) -> None:
    if isinstance(part, SystemPromptPart):
        builder.system(part.content)
    elif isinstance(part, UserPromptPart):
        builder.user(_user_text(part.content))
    elif isinstance(part, BaseToolReturnPart):
        builder.tool(part.model_response_str(), tool_call_id=part.tool_call_id, name=part.tool_name)
    elif isinstance(part, RetryPromptPart):  # pyright: ignore[reportDeprecated]
        if part.tool_name is not None:
            builder.tool(part.model_response(), tool_call_id=part.tool_call_id, name=part.tool_name)
        else:
            builder.user(part.model_response())
    elif isinstance(part, RetryFeedbackPart):
        builder.user(part.model_response())
    elif isinstance(part, CompactionPart):
        if part.content:
            builder.user(f"Summary of the earlier conversation:\n{part.content}")
    elif isinstance(part, SpeechPart):
        builder.user(part.content)
    # The remaining parts are records (tool availability, settings, instruction deltas) that only
    # pydantic-ai's Agent creates; they carry nothing a chat template can show.


def _user_text(content: str | Sequence[UserContent]) -> str:
    if isinstance(content, str):
        return content
    pieces: list[str] = []
    for item in content:
        if isinstance(item, str):
            pieces.append(item)
        elif isinstance(item, TextContent):
            pieces.append(item.content)
        elif isinstance(item, BinaryContent) and item.media_type.startswith("text/"):
            pieces.append(item.data.decode("utf-8", errors="replace"))
        elif not isinstance(item, CachePoint):
            pieces.append(f"[{_file_kind(item)} omitted: the local model reads text only]")
    return "\n".join(pieces)


def _file_kind(item: object) -> str:
    if isinstance(item, ImageUrl) or (isinstance(item, BinaryContent) and item.is_image):
        return "image"
    if isinstance(item, AudioUrl) or (isinstance(item, BinaryContent) and item.is_audio):
        return "audio"
    if isinstance(item, VideoUrl) or (isinstance(item, BinaryContent) and item.is_video):
        return "video"
    if isinstance(item, DocumentUrl) or (isinstance(item, BinaryContent) and item.is_document):
        return "document"
    return "file"


def _tool_call(part: ToolCallPart) -> dict[str, Any]:
    function = {"name": part.tool_name, "arguments": part.args_as_dict()}
    return {"type": "function", "id": part.tool_call_id, "function": function}


# -- chat template ---------------------------------------------------------------------------------


class _GenerationTag(Extension):
    """``{% generation %}...{% endgeneration %}`` from transformers: marks assistant text, renders as is."""

    tags = {"generation"}  # noqa: RUF012 - jinja's Extension declares it as a plain class attribute

    def parse(self, parser: Parser) -> list[nodes.Node]:
        next(parser.stream)
        return parser.parse_statements(("name:endgeneration",), drop_needle=True)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    # jinja's own tojson HTML-escapes <, >, & and ', which would corrupt code in prompts.
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise_exception(message: str) -> None:
    raise jinja2.TemplateError(message)


def _strftime_now(date_format: str) -> str:
    return datetime.now().strftime(date_format)


class ChatTemplate:
    """A model's Jinja chat template, rendered the way ``transformers`` renders it.

    Args:
        source: The template text (a GGUF's ``tokenizer.chat_template``).
        bos_token: The model's beginning-of-sequence token text, which some templates print.
        eos_token: The model's end-of-sequence token text.

    Raises:
        ProviderError: The template is not valid Jinja.

    """

    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = "") -> None:
        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=[_GenerationTag, "jinja2.ext.loopcontrols"]
        )
        env.filters["tojson"] = _tojson
        env.globals.update(raise_exception=_raise_exception, strftime_now=_strftime_now)
        try:
            self._template = env.from_string(source)
        except jinja2.TemplateSyntaxError as exc:
            raise _template_error(f"it is not valid Jinja (line {exc.lineno}: {exc.message})") from exc
        self.bos_token = bos_token
        self.eos_token = eos_token

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        **variables: Any,
    ) -> str:
        """Render a conversation into the prompt text.

        Args:
            messages: Chat dicts, as :func:`to_chat_messages` makes them.
            tools: Tool dicts, as :func:`tools_for_template` makes them; ``None`` or empty for none.
            add_generation_prompt: End with the opening of an assistant turn.
            **variables: Extra template variables (``enable_thinking=False`` for some templates).

        Raises:
            ProviderError: The template failed, or called ``raise_exception``.

        """
        try:
            return self._template.render(
                messages=list(messages),
                tools=list(tools) if tools else None,
                add_generation_prompt=add_generation_prompt,
                bos_token=self.bos_token,
                eos_token=self.eos_token,
                **variables,
            )
        # Template code is arbitrary: whatever fails inside it is the template's problem.
        except Exception as exc:
            raise _template_error(str(exc) or type(exc).__name__) from exc


def _template_error(reason: str) -> ProviderError:
    one_line = " ".join(reason.split())
    return ProviderError(f"the model's chat template cannot be used: {one_line}", hint=_TEMPLATE_HINT)


def tools_for_template(tool_definitions: Sequence[ToolDefinition]) -> list[dict[str, Any]]:
    """The tools as the OpenAI-style dicts chat templates print in their tools block."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description or "",
                "parameters": tool.parameters_json_schema,
            },
        }
        for tool in tool_definitions
    ]
