"""Making a stored history fit to continue after a crash or a kill.

A process killed while tools ran leaves a response whose tool calls have no results; every
provider rejects such a history. :func:`repair` answers each such call with an ``interrupted``
result, so the conversation can go on and the model knows those calls did not finish.
"""

from __future__ import annotations

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
)

INTERRUPTED_TEXT = "Interrupted: nestor stopped before this call finished; its effects, if any, are unknown."


def repair(history: list[ModelMessage]) -> ModelRequest | None:
    """Return the request that answers unanswered tool calls at the end of ``history``, if any."""
    if not history or not isinstance(history[-1], ModelResponse):
        return None
    calls = [part for part in history[-1].parts if isinstance(part, ToolCallPart)]
    if not calls:
        return None
    parts: list[ModelRequestPart] = [
        ToolReturnPart(
            call.tool_name, INTERRUPTED_TEXT, tool_call_id=call.tool_call_id, outcome="interrupted"
        )
        for call in calls
    ]
    return ModelRequest(parts=parts)
