"""OpenAI's Responses API (``POST /v1/responses``) for the scripted OpenAI server: a reply's wire form.

:class:`~nestor.testing.ScriptedOpenAIServer` answers both chat completions and responses from one
script of :class:`~nestor.testing.ServerReply` steps; this module renders a step as a ``response``
object, or as its stream of typed server-sent events (``response.created``, each output item
added, its text or arguments deltas and done, then ``response.completed`` carrying the usage).
Clients that speak only this API (Codex CLI) can then be pointed at the server.

Only the standard library is used.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from nestor.testing._http_server import EventStream, JSONReply, split_evenly

if TYPE_CHECKING:
    from nestor.testing.openai_server import ServerReply

__all__ = ["render_response"]


def render_response(step: ServerReply, request: dict[str, Any], number: int) -> JSONReply | EventStream:
    """The wire form of ``step`` answering the responses request ``request``, the ``number``-th request."""
    response = _Response(step, request, number)
    if not request.get("stream"):
        return JSONReply(response.body("completed"), truncate=step.drop_after_chunks is not None)
    events = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in response.events()]
    return EventStream(
        events, drop_at=step.drop_after_chunks, stall_at=step.stall_after_chunks, chunk_delay=step.chunk_delay
    )


class _Response:
    """One reply to one responses request: its output items, usage and events."""

    def __init__(self, step: ServerReply, request: dict[str, Any], number: int) -> None:
        self.step = step
        self.number = number
        self.model = str(request.get("model", "scripted"))
        self.created = int(time.time())
        self.usage = _usage(step, request)

    def items(self) -> list[dict[str, Any]]:
        """The completed output items: the message (when there is text), then each function call."""
        items: list[dict[str, Any]] = []
        if self.step.text:
            text = {"type": "output_text", "text": self.step.text, "annotations": []}
            items.append(self._message("completed", [text]))
        for index, call in enumerate(self.step.tool_calls):
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_scripted_{self.number}_{index}",
                    "call_id": call.id or f"call_{self.number}_{index}",
                    "name": call.name,
                    "arguments": call.arguments_json(),
                    "status": "completed",
                }
            )
        return items

    def body(self, status: str) -> dict[str, Any]:
        """The ``response`` object; its output and usage only once completed."""
        done = status == "completed"
        return {
            "id": f"resp_scripted_{self.number}",
            "object": "response",
            "created_at": self.created,
            "status": status,
            "model": self.model,
            "output": self.items() if done else [],
            "usage": self.usage if done else None,
            "error": None,
            "incomplete_details": None,
        }

    def events(self) -> list[dict[str, Any]]:
        """The stream: created, each item added, its deltas and done, completed."""
        events: list[dict[str, Any]] = [{"type": "response.created", "response": self.body("in_progress")}]
        for index, item in enumerate(self.items()):
            if item["type"] == "message":
                events.extend(self._message_events(index, item))
            else:
                events.extend(self._call_events(index, item))
        events.append({"type": "response.completed", "response": self.body("completed")})
        return [event | {"sequence_number": number} for number, event in enumerate(events)]

    def _message(self, status: str, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "type": "message",
            "id": f"msg_scripted_{self.number}",
            "status": status,
            "role": "assistant",
            "content": content,
        }

    def _message_events(self, index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
        at = {"item_id": item["id"], "output_index": index, "content_index": 0}
        empty = {"type": "output_text", "text": "", "annotations": []}
        events: list[dict[str, Any]] = [
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": self._message("in_progress", []),
            },
            {"type": "response.content_part.added", **at, "part": empty},
        ]
        events.extend(
            {"type": "response.output_text.delta", **at, "delta": piece}
            for piece in split_evenly(self.step.text, self.step.chunks)
        )
        events.append({"type": "response.output_text.done", **at, "text": self.step.text})
        events.append({"type": "response.content_part.done", **at, "part": item["content"][0]})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        return events

    def _call_events(self, index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
        at = {"item_id": item["id"], "output_index": index}
        events: list[dict[str, Any]] = [
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": item | {"arguments": "", "status": "in_progress"},
            }
        ]
        events.extend(
            {"type": "response.function_call_arguments.delta", **at, "delta": piece}
            for piece in split_evenly(item["arguments"], self.step.args_chunks)
        )
        events.append({"type": "response.function_call_arguments.done", **at, "arguments": item["arguments"]})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        return events


def _usage(step: ServerReply, request: dict[str, Any]) -> dict[str, Any]:
    """The ``usage`` object: the step's, or a rough estimate from the request and reply sizes."""
    if step.usage is not None:
        counts = (step.usage.prompt_tokens, step.usage.completion_tokens)
        cached, reasoning = step.usage.cached_tokens or 0, step.usage.reasoning_tokens or 0
    else:
        sent = [request.get(key) for key in ("instructions", "tools", "input")]
        reply_size = len(step.text) + sum(len(c.arguments_json()) for c in step.tool_calls)
        counts = (max(1, len(json.dumps(sent)) // 4), max(1, reply_size // 4))
        cached = reasoning = 0
    return {
        "input_tokens": counts[0],
        "output_tokens": counts[1],
        "total_tokens": sum(counts),
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens_details": {"reasoning_tokens": reasoning},
    }
