"""Per-step cost of nestor's agent loop against pydantic-ai's own ``Agent`` loop, same model, same tool.

The model is a zero-cost scripted ``FunctionModel`` (streamed): it calls one trivial tool ``steps``
times, then answers. nestor's loop stores every message in a real SQLite file as it goes;
pydantic-ai's ``Agent`` keeps its history in memory. Both stream the responses.

A third column measures the floor both loops stand on: the same requests through pydantic-ai's
model layer alone (``pydantic_ai.direct.model_request_stream``), with no loop around them. The
loop's own overhead is its time per step minus that floor.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from nestor.bus import EventBus
from nestor.permissions import PermissionPolicy
from nestor.runtime.kernel.hooks import BudgetHook, Budgets, LoopGuardHook
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.kernel.setup import AgentSetup
from nestor.store.db import open_database
from nestor.store.messages import MessageStore
from nestor.store.sessions import SessionStore
from nestor.tools.base import Tool, ToolContext


def scripted_model(steps: int) -> FunctionModel:
    """A model that calls ``echo`` ``steps`` times, then answers; it decides from the history length."""

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        calls_so_far = (len(messages) - 1) // 2
        if calls_so_far < steps:
            yield {
                0: DeltaToolCall(
                    # Different arguments each step: nestor's loop guard stops an agent repeating a call.
                    name="echo",
                    json_args=json.dumps({"text": f"x{calls_so_far}"}),
                    tool_call_id=f"c{calls_so_far}",
                )
            }
        else:
            yield "done"

    return FunctionModel(stream_function=stream, model_name="bench")


class EchoParams(BaseModel):
    """Arguments of the bench tool."""

    text: str


class EchoTool(Tool[EchoParams]):
    """The cheapest possible tool."""

    name = "echo"
    params_model = EchoParams
    read_only = True

    @property
    def description(self) -> str:
        """Say what it does."""
        return "Echo the text."

    async def run(self, params: EchoParams, ctx: ToolContext) -> str:
        """Return the text."""
        return params.text


async def nestor_seconds_per_step(steps: int, root: Path) -> float:
    """Time one nestor run of ``steps`` tool steps, per model request."""
    database = open_database(root / f"bench-{steps}-{time.monotonic_ns()}.db")
    sessions, messages = SessionStore(database), MessageStore(database)
    session = sessions.create(str(root))
    setup = AgentSetup(
        model=scripted_model(steps),
        model_name="bench",
        system_prompt="bench",
        tools=[EchoTool()],
        sessions=sessions,
        messages=messages,
        bus=EventBus(),
        policy=PermissionPolicy(project_root=str(root)),
        asker=None,
        project_root=root,
        hooks=[BudgetHook(Budgets()), LoopGuardHook()],  # the agent recipe's, as every agent's
    )
    agent = SessionAgent(session.id, setup, history=[])
    started = time.perf_counter()
    result = await agent.run("go")
    elapsed = time.perf_counter() - started
    database.close()
    assert result.num_turns == steps + 1, result
    return elapsed / (steps + 1)


async def pydantic_ai_seconds_per_step(steps: int) -> float:
    """Time one pydantic-ai ``Agent`` run of ``steps`` tool steps, per model request (streamed)."""
    from pydantic_ai import Agent
    from pydantic_ai.usage import UsageLimits

    agent = Agent(scripted_model(steps), instructions="bench")

    @agent.tool_plain
    def echo(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Echo the text."""
        return text

    async def drain(_ctx: Any, events: Any) -> None:
        async for _ in events:
            pass

    started = time.perf_counter()
    # Its request_limit defaults to 50 even when not asked for.
    result = await agent.run("go", event_stream_handler=drain, usage_limits=UsageLimits(request_limit=None))
    elapsed = time.perf_counter() - started
    assert result.output == "done"
    return elapsed / (steps + 1)


async def model_layer_seconds_per_step(steps: int) -> float:
    """Time the same requests through the model layer alone: no store, no events, no tool dispatch."""
    from pydantic_ai.direct import model_request_stream
    from pydantic_ai.messages import (
        InstructionPart,
        ModelRequest,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.tools import ToolDefinition

    model = scripted_model(steps)
    parameters = ModelRequestParameters(
        function_tools=[ToolDefinition(name="echo", parameters_json_schema=EchoParams.model_json_schema())],
        allow_text_output=True,
        instruction_parts=[InstructionPart(content="bench")],
    )
    history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("go")])]
    started = time.perf_counter()
    for _ in range(steps + 1):
        async with model_request_stream(model, history, model_request_parameters=parameters) as stream:
            async for _event in stream:
                pass
            response = stream.get()
        history.append(response)
        calls = [part for part in response.parts if isinstance(part, ToolCallPart)]
        if calls:
            history.append(
                ModelRequest(parts=[ToolReturnPart("echo", "x", tool_call_id=c.tool_call_id) for c in calls])
            )
    return (time.perf_counter() - started) / (steps + 1)


async def measure(repeats: int = 5) -> list[dict[str, float]]:
    """Return the median per-step times of both loops at 10 and 100 steps."""
    rows: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        await nestor_seconds_per_step(3, root)  # warm caches and imports
        await pydantic_ai_seconds_per_step(3)
        for steps in (10, 100):
            ours: list[float] = []
            theirs: list[float] = []
            floor: list[float] = []
            for _ in range(repeats):  # interleaved, so all three see the same machine load
                ours.append(await nestor_seconds_per_step(steps, root))
                theirs.append(await pydantic_ai_seconds_per_step(steps))
                floor.append(await model_layer_seconds_per_step(steps))
            rows.append(
                {
                    "steps": steps,
                    "nestor_ms": statistics.median(ours) * 1000,
                    "agent_ms": statistics.median(theirs) * 1000,
                    "model_layer_ms": statistics.median(floor) * 1000,
                }
            )
    return rows


def main() -> list[dict[str, float]]:
    """Print the table and return its rows."""
    rows = asyncio.run(measure())
    print("Loop time per step (zero-cost scripted model, streamed; median of 5 interleaved runs)")
    print(
        f"  {'steps':>5}  {'nestor loop':>11}  {'pydantic-ai Agent':>17}  {'model layer':>11}"
        f"  {'total ratio':>11}  {'overhead ratio':>14}"
    )
    for row in rows:
        floor = row["model_layer_ms"]
        total_ratio = row["nestor_ms"] / row["agent_ms"]
        overhead_ratio = max(row["nestor_ms"] - floor, 0.0) / max(row["agent_ms"] - floor, 1e-9)
        print(
            f"  {row['steps']:>5}  {row['nestor_ms']:>8.3f} ms  {row['agent_ms']:>14.3f} ms  {floor:>8.3f} ms"
            f"  {total_ratio:>11.2f}  {overhead_ratio:>14.3f}"
        )
    print("  overhead ratio = (loop - model layer) / (Agent - model layer); target <= 0.10")
    print("  nestor's column includes writing every message to SQLite; the Agent keeps history in memory")
    return rows


if __name__ == "__main__":
    main()
