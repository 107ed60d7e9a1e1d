"""The OpenAI SDK client of nestor's chat-completions models: the SDK's own, minus one walk per request.

Before it sends a ``chat.completions.create`` request, the SDK walks the whole body against its
parameter types (``_transform_recursive``: typing introspection at every node of every message),
to rename aliased keys and format dates and files. Chat completions' messages and tools have none
of these: the walk gives back what it was given. Yet it costs about 9 ms a request at 30 messages
and 130 ms at 750, on every request of every agent, holding the event loop: meanwhile no other
agent runs and the full-screen UI draws nothing.

pydantic-ai hands the SDK its messages and tools as the wire's JSON already, so
:class:`ChatCompletions` sends them as the body's extra JSON, which the SDK merges in after its
walk; every other parameter is walked as before, and a caller's own ``extra_body`` still wins.
``tests/providers/test_openai_client.py`` sends the same requests both ways and compares the bodies
the server received.

Imported only where an OpenAI chat model is built: it imports the SDK.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from openai import AsyncOpenAI, NotGiven, Omit, omit
from openai.resources.chat import AsyncChat, AsyncCompletions
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam

if TYPE_CHECKING:
    from httpx2 import AsyncClient

__all__ = ["ChatCompletions", "OpenAIClient", "openai_client"]


class ChatCompletions(AsyncCompletions):
    """``chat.completions`` whose ``create`` sends messages and tools as they are."""

    async def create(  # type: ignore[override]  # the SDK's overloads, one signature here
        self,
        *,
        messages: Iterable[ChatCompletionMessageParam],
        tools: Iterable[ChatCompletionToolUnionParam] | Omit = omit,
        extra_body: dict[str, Any] | None = None,
        **params: Any,
    ) -> Any:
        """Send the request, its messages and tools outside the SDK's walk of the body."""
        bulk: dict[str, Any] = {"messages": list(messages)}
        if not isinstance(tools, Omit | NotGiven):
            bulk["tools"] = list(tools)
        return await super().create(messages=[], extra_body={**bulk, **(extra_body or {})}, **params)


# The SDK declares its cached properties as properties for type checkers; they are cached_property.
class _Chat(AsyncChat):
    @cached_property
    def completions(self) -> AsyncCompletions:  # pyright: ignore[reportIncompatibleMethodOverride]
        return ChatCompletions(self._client)


class OpenAIClient(AsyncOpenAI):
    """``AsyncOpenAI`` with :class:`ChatCompletions`; its copies (``with_options``) are too."""

    @cached_property
    def chat(self) -> AsyncChat:  # pyright: ignore[reportIncompatibleMethodOverride]
        """The chat resource, its ``completions`` a :class:`ChatCompletions`."""
        return _Chat(self)


def openai_client(*, base_url: str, api_key: str, http_client: AsyncClient | None) -> OpenAIClient:
    """The client for an OpenAI(-compatible) provider at ``base_url``.

    Args:
        base_url: The API's base URL.
        api_key: The key (a placeholder for a keyless local server: the SDK insists on one).
        http_client: The HTTP client to send with; a new one of pydantic-ai's defaults when None,
            as its providers make.

    """
    from pydantic_ai.models import create_async_httpx2_client

    http = http_client if http_client is not None else create_async_httpx2_client()
    return OpenAIClient(base_url=base_url, api_key=api_key, http_client=http)
