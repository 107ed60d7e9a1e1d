"""What a process does once for every command it will run: the warm process does it before forking.

Importing the modules a command needs before its first model request is most of it; the rest is
work pydantic defers to first use, such as building the serializer of pydantic-ai's messages
(0.6 s here), which the first message stored would otherwise pay, and the tools' JSON schemas.
"""

from __future__ import annotations

import contextlib
import importlib

WARM_MODULES = (
    "nestor.app.conversation",
    "nestor.app.mcp_serve",
    "nestor.runtime.factory.agents",
    "nestor.runtime.features.small.harness",  # imported in a command only on a small model
    "nestor.providers.build",
    "nestor.providers.openai_client",
    "nestor.agents.builtin",
    *(f"nestor.tools.{name}" for name in ("edit", "fetch", "glob", "grep", "ls", "view", "write")),
    *(f"nestor.tools.{name}" for name in ("web_fetch", "web_search", "search_backends")),
    "nestor.tools.sandbox.landlock_exec",
    "pydantic_ai.models.openai",
    "pydantic_ai.providers.openai",
    "openai.resources.chat",
    "openai.lib.streaming.chat",
    "pydantic_ai.models.anthropic",
    "pydantic_ai.providers.anthropic",
    "pydantic_ai.models.google",
    "pydantic_ai.providers.google",
    "google.auth.aio.credentials",  # google-genai's client imports these with its first request
    "httpcore",
    "genai_prices.data",
    "genai_prices.decompose",
    "importlib.readers",
    "importlib.resources.readers",
    "genai_prices.validation",
    "anyio._backends._asyncio",
)
"""What a command imports before its first request; one that cannot import is left out."""


def warm_up() -> None:
    """Import :data:`WARM_MODULES`, build the stored messages' serializer and the tools' schemas."""
    for module in WARM_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    from nestor.tools.base import build_loaded_schemas

    build_loaded_schemas()
    ModelMessagesTypeAdapter.dump_json([])
    ModelMessagesTypeAdapter.validate_json("[]")
