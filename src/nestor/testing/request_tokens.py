"""The fixed size of a model request: its system prompt and tool definitions, in tokens.

What a harness sends with every request whatever the conversation holds, read from a request body
as a scripted server records it, in any of the four APIs: Anthropic's Messages (``system``),
OpenAI's chat completions (``system`` and ``developer`` messages) and Responses (``instructions``,
and ``system``/``developer`` input items), and Gemini's ``generateContent`` (``systemInstruction``;
its tools are the ``functionDeclarations`` inside each ``tools`` entry); tools as their JSON.
One counter for every harness, so figures compare: characters / 4, rounded up (no tokenizer's
vocabulary needs downloading, and tools are JSON, which tokenizers split about that finely).

Only the standard library is used.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["count_tokens", "fixed_text", "main_request", "tool_definitions"]


def count_tokens(text: str) -> int:
    """Tokens of ``text`` by the one counter: characters / 4, rounded up."""
    return -(-len(text) // 4)


def fixed_text(body: dict[str, Any]) -> str:
    """A request's system prompt and tool definitions as one text (tools as their JSON)."""
    parts: list[str] = []
    system = body.get("system")
    if system is not None:
        parts.append(_text(system))
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        parts.append(instructions)
    messages = body.get("messages") or body.get("input") or []
    for message in messages if isinstance(messages, list) else []:  # pyright: ignore[reportUnknownVariableType]
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):  # pyright: ignore[reportUnknownMemberType]
            parts.append(_text(message.get("content")))  # pyright: ignore[reportUnknownMemberType]
    instruction = body.get("systemInstruction")
    if isinstance(instruction, dict):
        parts.append(_text(instruction.get("parts")))  # pyright: ignore[reportUnknownMemberType]
    elif isinstance(instruction, str):
        parts.append(instruction)
    tools = tool_definitions(body)
    if tools:
        parts.append(json.dumps(tools))
    return "\n".join(parts)


def tool_definitions(body: dict[str, Any]) -> list[Any]:
    """A request's tools, one entry each: Gemini's ``functionDeclarations`` taken out of their groups."""
    tools = body.get("tools")
    if not isinstance(tools, list):
        return []
    definitions: list[Any] = []
    for tool in tools:  # pyright: ignore[reportUnknownVariableType]
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None  # pyright: ignore[reportUnknownMemberType]
        if isinstance(declarations, list):
            definitions.extend(declarations)  # pyright: ignore[reportUnknownArgumentType]
        else:
            definitions.append(tool)  # a built-in tool (Gemini's googleSearch) or another API's tool
    return definitions


def main_request(bodies: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first request that carries tools (an agent's turn, not a title's), else the first."""
    return next((body for body in bodies if tool_definitions(body)), bodies[0] if bodies else None)


def _text(content: Any) -> str:
    """The text of a string, or of a list of blocks with ``text``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        blocks = [block for block in content if isinstance(block, dict)]  # pyright: ignore[reportUnknownVariableType]
        return "\n".join(str(block.get("text", "")) for block in blocks)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType, reportUnknownVariableType]
    return ""
