"""The full-screen UI's cost to the agents: 20 parallel sub-agents with and without the TUI attached.

The same run twice over, interleaved: the main agent (the real app, a real SQLite store, the real
openai provider against the scripted OpenAI-compatible server on 127.0.0.1) answers its prompt
with 20 ``task`` calls at once (``[agents] max_parallel = 20``); each ``general`` sub-agent makes 5
requests, each streamed in 10 chunks after 100 ms of latency: 4 that call ``ls`` with a few words
of text, then its report. The wall time is from the prompt sent to the main agent's answer.

- *without the UI*: the app and its conversation, nothing subscribed to the bus;
- *with the UI*: the same under :class:`~nestor.cli.tui.app.NestorTui`, running headless at
  120x40 (Textual's test driver: the real compositor and widgets, no terminal), its bus handler
  queueing every event and its tick redrawing the tree, the transcript and the status bar.

The ratio (with / without) is what drawing the tree costs the agents; the target is 5%.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from nestor.app import App
from nestor.cli.options import CommonOptions
from nestor.config.loading import load_settings
from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall

AGENTS = 20
STEPS = 5  # requests per sub-agent: 4 tool calls, then the report
LATENCY_S = 0.1
CHUNKS = 10
REPEATS = 9
TARGET = 1.05


def first_user_text(body: dict[str, Any]) -> str:
    """The first user message of a chat-completions request."""
    for message in body.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else str(content)
    return ""


def answer(body: dict[str, Any]) -> ServerReply:
    """The main agent fans out; each sub-agent lists the project 4 times, then reports."""
    prompt = first_user_text(body)
    done = sum(1 for message in body.get("messages", []) if message.get("role") == "assistant")
    if prompt.startswith("MAIN"):
        if done:
            return ServerReply(text="All sub-agents reported.")
        calls = tuple(
            ServerToolCall(
                "task",
                {
                    "description": f"look up {i}",
                    "prompt": f"AGENT-{i:02d}: look up item {i}",
                    "subagent_type": "general",
                },
            )
            for i in range(AGENTS)
        )
        return ServerReply(tool_calls=calls)
    if prompt.startswith("AGENT"):
        text = f"Looking at step {done} of {prompt[:8]}: listing the project once more to be sure. "
        if done < STEPS - 1:
            call = ServerToolCall("ls", {"path": ".", "depth": done + 1})
            return ServerReply(text=text, tool_calls=(call,), chunks=CHUNKS, delay=LATENCY_S)
        return ServerReply(
            text=f"{prompt[:8]}: found it after {done} look-ups.", chunks=CHUNKS, delay=LATENCY_S
        )
    return ServerReply(text="A title")  # the session's title


def project(root: Path, base_url: str) -> Path:
    """A project whose large model is the scripted server, with 20 sub-agents at once."""
    folder = root / "project"
    folder.mkdir(parents=True)
    (folder / "README.md").write_text("# bench\n", encoding="utf-8")
    (folder / "nestor.toml").write_text(
        '[models]\nlarge = "scripted:bench"\n\n'
        f'[providers.scripted]\ntype = "openai"\nbase_url = "{base_url}"\n'
        f"\n[agents]\nmax_parallel = {AGENTS}\n",
        encoding="utf-8",
    )
    return folder


async def run_once(root: Path, base_url: str, *, with_ui: bool) -> tuple[float, float]:
    """Wall and CPU seconds from the prompt to the main agent's answer, in a fresh store.

    The CPU seconds are the process's (the server's threads included): on a busy machine they
    vary less than the wall time, and what the UI adds to them is its own work.
    """
    folder = project(root, base_url)
    env = {"NESTOR_HOME": str(root / "home"), "HOME": str(root)}
    settings = load_settings(folder, env=env, user_config_path=root / "none.toml", trusted=True)
    nestor = App.open(settings)
    try:
        if not with_ui:
            conversation = await nestor.conversation(interactive=True, env={})
            started, cpu = time.perf_counter(), time.process_time()
            task = conversation.submit("MAIN: look up 20 items")
            assert task is not None
            result = await task
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        else:
            from nestor.cli.tui import build_tui

            tui = await build_tui(nestor, CommonOptions(directory=folder, trust=True), env={})
            async with tui.run_test(size=(120, 40)) as pilot:
                await pilot.pause(0.2)
                started, cpu = time.perf_counter(), time.process_time()
                task = tui.controller.submit("MAIN: look up 20 items")
                assert task is not None
                result = await task
                elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
                agents = len(tui.live_tree.agents)
                await pilot.pause(0.2)
            assert agents == AGENTS + 1, agents
        assert result.stop_reason == "completed" and result.text == "All sub-agents reported.", result
        return elapsed, cpu
    finally:
        nestor.close()


async def measure(repeats: int = REPEATS) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """Wall and CPU seconds without and with the UI, ``repeats`` interleaved runs each (after a warm-up)."""
    without: list[tuple[float, float]] = []
    with_ui: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAIServer([answer] * 10_000) as server:
        root = Path(tmp)
        await run_once(root / "warm-a", server.base_url, with_ui=False)
        await run_once(root / "warm-b", server.base_url, with_ui=True)
        for index in range(repeats):  # interleaved, so both see the same machine load
            without.append(await run_once(root / f"without-{index}", server.base_url, with_ui=False))
            with_ui.append(await run_once(root / f"with-{index}", server.base_url, with_ui=True))
    return without, with_ui


def main(repeats: int = REPEATS) -> float:
    """Print the figures; return the ratio of the medians."""
    without, with_ui = asyncio.run(measure(repeats))
    without_s, with_s = statistics.median(w for w, _ in without), statistics.median(w for w, _ in with_ui)
    without_cpu, with_cpu = statistics.median(c for _, c in without), statistics.median(c for _, c in with_ui)
    ratio = with_s / without_s
    verdict = "PASS" if ratio <= TARGET else "FAIL"
    print(f"TUI: {AGENTS} parallel sub-agents, the agents' wall time without and with the UI attached")
    print(
        f"  ({STEPS} streamed requests each at {LATENCY_S * 1000:.0f} ms latency over loopback HTTP; "
        f"real SQLite; median of {repeats} interleaved runs)"
    )
    for label, median, runs in (
        ("without the UI", without_s, without),
        ("with the UI (headless)", with_s, with_ui),
    ):
        print(f"  {label:28}{median:8.3f} s   (runs: {', '.join(f'{wall:.3f}' for wall, _ in runs)})")
    print(f"  {'ratio with / without':28}{ratio:8.3f} x   target <= {TARGET:.2f}x  {verdict}")
    print(
        f"  {'CPU without / with':28}{without_cpu:8.3f} s / {with_cpu:.3f} s   "
        f"(ratio {with_cpu / without_cpu:.3f} x: the UI's own work)"
    )
    return ratio


if __name__ == "__main__":
    main()
