"""Fan-out: 20 sub-agents started at once against one sub-agent alone, same per-request latency.

One main agent answers its prompt with ``task`` calls in a single response (20 parallel calls, or
one), with ``[agents] max_parallel = 20``. Each sub-agent (the built-in ``general`` spec, on its
parent's model) makes 5 model requests: 4 calls of a cheap read-only tool, then its report. Every
sub-agent request waits 100 ms before answering (``Step.delay``), as a provider would; the main
agent's own requests answer at once, so both wall times are the sub-agents' work plus nestor's.
Sessions and messages go to a real SQLite file, system prompts carry the real ``<environment>``
section (a ``git`` subprocess per agent), exactly as in the app.

The floor is 5 x 100 ms = 0.5 s for both: ideal fan-out costs nothing over one agent. The ratio
(20 agents / 1 agent) shows what running them side by side on one event loop costs.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from functools import reduce
from operator import add
from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models.function import AgentInfo

from nestor.config.sections import AgentsConfig
from nestor.testing import ScriptedModel, Step, call, reply
from subagents import BenchTree, conversation_model, first_prompt, responses_so_far

AGENTS = 20
STEPS = 5  # model requests per sub-agent: 4 tool calls, then the report
LATENCY_S = 0.1
REPEATS = 5
TARGET = 1.2


def fanout_model(latency_s: float) -> ScriptedModel:
    """The main agent fans out ``MAIN <n>`` tasks; each sub-agent makes STEPS requests of latency_s."""

    def decide(messages: list[ModelMessage], info: AgentInfo) -> Step:
        prompt = first_prompt(messages)
        done = responses_so_far(messages)
        if prompt.startswith("MAIN"):
            if done:
                return reply("All sub-agents reported.")
            count = int(prompt.split()[1])
            tasks = [
                call("task", {"description": f"look up {i}", "prompt": f"AGENT-{i:02d}: look up item {i}"})
                for i in range(count)
            ]
            return reduce(add, tasks)
        if done < STEPS - 1:
            # Different arguments each step: the loop guard stops an agent repeating a call.
            return call("echo", {"text": f"{prompt[:8]} step {done}"}, delay=latency_s)
        return reply(f"{prompt[:8]}: found it after {done} look-ups.", delay=latency_s)

    return conversation_model(decide, "bench-fanout")


def succeeded(history: list[ModelMessage]) -> int:
    """How many ``task`` results in ``history`` report a successful sub-agent."""
    return sum(
        bool(part.metadata and part.metadata["subagent"]["success"])
        for message in history
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == "task"
    )


async def run_once(root: Path, label: str, agents: int, latency_s: float = LATENCY_S) -> float:
    """Wall seconds of one main-agent run delegating ``agents`` tasks at once, in a fresh store."""
    model = fanout_model(latency_s)
    bench = BenchTree(
        root / label / "project", root / label / "data", config=AgentsConfig(max_parallel=AGENTS)
    )
    main = bench.main(model, ("echo",), system_prompt="You are the main bench agent.")
    started = time.perf_counter()
    result = await main.run(f"MAIN {agents}")
    elapsed = time.perf_counter() - started
    bench.close()
    assert result.stop_reason == "completed", result
    assert succeeded(main.history) == agents, "a sub-agent failed"
    assert len(model.requests) == 2 + agents * STEPS, len(model.requests)
    return elapsed


async def measure(
    agents: int = AGENTS, repeats: int = REPEATS
) -> tuple[list[float], list[float], list[float]]:
    """Wall seconds of one sub-agent, of ``agents`` sub-agents, and of ``agents`` at zero latency.

    ``repeats`` interleaved runs each. The zero-latency run is nestor's own work for the fan-out
    (agents built, requests streamed, tools run, messages stored), with no model time to hide in.
    """
    one: list[float] = []
    many: list[float] = []
    work: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        await run_once(root, "warm-up", 2, latency_s=0.0)
        for index in range(repeats):  # interleaved, so all see the same machine load
            one.append(await run_once(root, f"one-{index}", 1))
            many.append(await run_once(root, f"many-{index}", agents))
            work.append(await run_once(root, f"work-{index}", agents, latency_s=0.0))
    return one, many, work


def main(agents: int = AGENTS, repeats: int = REPEATS) -> float:
    """Print the figures; return the ratio of the medians."""
    one, many, work = asyncio.run(measure(agents, repeats))
    one_s, many_s, work_s = statistics.median(one), statistics.median(many), statistics.median(work)
    ratio = many_s / one_s
    floor = STEPS * LATENCY_S
    verdict = "PASS" if ratio <= TARGET else "FAIL"
    print(f"Fan-out: {agents} sub-agents started by one response vs 1 sub-agent alone")
    print(
        f"  ({STEPS} requests each at {LATENCY_S * 1000:.0f} ms latency; real SQLite; "
        f"median of {repeats} interleaved runs)"
    )
    print(f"  {'1 sub-agent':28}{one_s:8.3f} s   (floor {floor:.3f} s)")
    print(f"  {f'{agents} sub-agents':28}{many_s:8.3f} s   (runs: {', '.join(f'{s:.3f}' for s in many)})")
    print(
        f"  {f'{agents} sub-agents at 0 ms':28}{work_s:8.3f} s   (nestor's own work: no latency to hide it)"
    )
    print(f"  {f'ratio {agents} / 1':28}{ratio:8.2f} x   target <= {TARGET:.1f}x  {verdict}")
    return ratio


if __name__ == "__main__":
    main()
