"""Routing for the scripted OpenAI-compatible server: each conversation follows its own script.

A main agent and its sub-agents send requests in whatever order they run; a request is answered
from the route its first user message starts with, so each agent's script holds whatever the
interleaving. Requests of no route (the session's title) get a title.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nestor.testing import ServerReply, ServerToolCall, ServerUsage, first_user_text

Route = Callable[[dict[str, Any]], ServerReply]
"""A reply decided from the request body."""


def router(routes: dict[str, list[ServerReply | Route]], *, requests: int = 40) -> list[Route]:
    """Server steps (``requests`` of them) answering by route, in each route's order."""
    queues = {key: list(steps) for key, steps in routes.items()}

    def step(body: dict[str, Any]) -> ServerReply:
        first = first_user_text(body)
        for key, queue in queues.items():
            if first.startswith(key):
                assert queue, f"route {key!r} has no reply left"
                reply = queue.pop(0)
                return reply if isinstance(reply, ServerReply) else reply(body)
        return ServerReply(text="A session title", usage=ServerUsage(10, 3))

    return [step] * requests


def tool_texts(body: dict[str, Any]) -> str:
    """Every tool result of a request body, joined."""
    return "\n".join(str(m.get("content")) for m in body["messages"] if m["role"] == "tool")


def task_call(description: str, prompt: str, **extra: object) -> ServerToolCall:
    """A ``task`` tool call (a route for the child is keyed on the start of ``prompt``)."""
    return ServerToolCall("task", {"description": description, "prompt": prompt, **extra})
