"""Memory kept by each idle pooled sub-agent (a spec with ``persist: true``).

N project agent files ``pooled-NN.md`` say ``persist: true`` (distinct specs, so each task gets its
own pool key: parent, spec name, prompt hash, tools, model). One main agent delegates N tasks in one
response, with ``[agents] pool_size = N`` and ``max_parallel = N``; each sub-agent makes two calls
of a cheap tool and reports, so it ends with a short history (6 messages), then waits idle in the
pool with its session, history, tools, hooks and setup. Everything is real: the tree, the registry,
a SQLite file in a temporary directory; the model is scripted and instant.

Measured with ``tracemalloc`` (after ``gc.collect()``): a snapshot with the N agents idle in the
pool, then one after the pool let them go the way it expires agents (``pool.expire()`` with a zero
idle time, and the tree forgetting them). The difference is what the pool alone was keeping alive;
per agent it is that divided by N. Whatever else the run left behind (the main agent's history,
the parsed agent files, SQLite's caches) is in both snapshots and cancels out; it is shown apart,
as the growth of the whole run.
"""

from __future__ import annotations

import asyncio
import gc
import tempfile
import tracemalloc
import weakref
from dataclasses import dataclass
from functools import reduce
from operator import add
from pathlib import Path

from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo

from nestor.config.sections import AgentsConfig
from nestor.runtime.tree.delegation import AgentTree
from nestor.testing import ScriptedModel, Step, call, reply
from subagents import BenchTree, conversation_model, first_prompt, responses_so_far

AGENTS = 50
TOOL_CALLS = 2
TARGET_BYTES = 1024 * 1024


def spec_text(index: int) -> str:
    """A persistent project agent, one per index (so each gets its own pool key)."""
    return (
        f"---\nname: pooled-{index:02d}\n"
        f'description: "Looks up records of shard {index} and reports what it found."\n'
        "persist: true\n---\n"
        f"You look up records of shard {index}. Use the echo tool, then report in one sentence.\n"
    )


def pool_model() -> ScriptedModel:
    """The main agent delegates ``MAIN <n>`` tasks; each pooled agent calls ``echo`` twice, then reports."""

    def decide(messages: list[ModelMessage], info: AgentInfo) -> Step:
        prompt = first_prompt(messages)
        done = responses_so_far(messages)
        if prompt.startswith("MAIN"):
            if done:
                return reply("Every shard is looked up.")
            count = int(prompt.split()[1])
            tasks = [
                call(
                    "task",
                    {
                        "description": f"shard {i}",
                        "prompt": f"SHARD-{i:02d}: look up the records of shard {i} and say how many.",
                        "subagent_type": f"pooled-{i:02d}",
                    },
                )
                for i in range(count)
            ]
            return reduce(add, tasks)
        if done < TOOL_CALLS:
            return call("echo", {"text": f"{prompt[:8]} record page {done}"})
        return reply(f"{prompt[:8]}: {done} pages of records, 40 each.")

    return conversation_model(decide, "bench-pool")


def release_pool(tree: AgentTree) -> int:
    """Let every idle agent go, as the pool does when they expire; return how many there were."""
    tree.pool.configure(size=0, idle_s=0.0)
    released = 0
    for agent in tree.pool.expire():
        tree.live.pop(agent.session_id, None)
        released += 1
    return released


def traced(snapshot: tracemalloc.Snapshot) -> tracemalloc.Snapshot:
    """The snapshot without tracemalloc's own allocations."""
    return snapshot.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])


@dataclass
class PoolFigures:
    """What one run measured."""

    agents: int
    pooled: int
    messages_per_agent: int
    run_growth: int
    pool_bytes: int
    still_alive: int
    top_sites: list[tuple[str, int]]


async def measure(agents: int = AGENTS) -> PoolFigures:
    """Run ``agents`` pooled tasks and measure what the idle pool keeps."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = AgentsConfig(max_parallel=agents, pool_size=agents)
        bench = BenchTree(root / "project", root / "data", config=config)
        for index in range(agents):
            bench.write_agent(f"pooled-{index:02d}", spec_text(index))
        model = pool_model()
        main = bench.main(model, ("echo",), system_prompt="You are the main bench agent.")
        await bench.factory.recipe.environment()  # warm imports outside the measured window

        gc.collect()
        tracemalloc.start()
        before = traced(tracemalloc.take_snapshot())
        result = await main.run(f"MAIN {agents}")
        assert result.stop_reason == "completed", result
        model.requests.clear()  # the scripted model's record of requests shares the agents' messages
        gc.collect()
        with_pool = traced(tracemalloc.take_snapshot())
        idle = bench.tree.pool.agents()
        pooled = len(idle)
        messages_per_agent = max(len(agent.history) for agent in idle)
        refs = [weakref.ref(agent) for agent in idle]
        del idle
        released = release_pool(bench.tree)
        gc.collect()
        without_pool = traced(tracemalloc.take_snapshot())
        tracemalloc.stop()

        assert released == pooled
        run_growth = sum(stat.size_diff for stat in with_pool.compare_to(before, "filename"))
        by_line = with_pool.compare_to(without_pool, "lineno")
        pool_bytes = sum(stat.size_diff for stat in by_line)
        top = [(str(stat.traceback), stat.size_diff) for stat in by_line[:5]]
        figures = PoolFigures(
            agents=agents,
            pooled=pooled,
            messages_per_agent=messages_per_agent,
            run_growth=run_growth,
            pool_bytes=pool_bytes,
            still_alive=sum(ref() is not None for ref in refs),
            top_sites=top,
        )
        bench.close()
    return figures


def main(agents: int = AGENTS) -> PoolFigures:
    """Print the figures and return them."""
    figures = asyncio.run(measure(agents))
    per_agent = figures.pool_bytes / max(figures.pooled, 1)
    verdict = "PASS" if per_agent < TARGET_BYTES and figures.pooled == agents else "FAIL"
    print(f"Memory of idle pooled sub-agents ({agents} persist: true specs, pool_size={agents}; tracemalloc)")
    print(
        f"  idle agents in the pool:            {figures.pooled} ({figures.messages_per_agent} messages each)"
    )
    print(f"  growth of the whole run:            {figures.run_growth / 1024:10.1f} KB")
    print(f"  kept alive by the pool:             {figures.pool_bytes / 1024:10.1f} KB")
    print(f"  per idle agent:                     {per_agent / 1024:10.1f} KB   target < 1024 KB  {verdict}")
    print(f"  agents still alive once released:   {figures.still_alive} (0: the figure above is all of them)")
    print("  largest shares of the pool's memory:")
    for site, size in figures.top_sites:
        print(f"    {size / 1024:8.1f} KB  {site}")
    return figures


if __name__ == "__main__":
    main()
