"""The full-screen UI's cost to the agents: 20 parallel sub-agents with and without the TUI attached.

The same run twice over, interleaved: the main agent (the real app, a real SQLite store, the real
openai provider against the scripted OpenAI-compatible server) answers its prompt with 20 ``task``
calls at once (``[agents] max_parallel = 20``); each ``general`` sub-agent makes 5 requests, each
streamed in 10 chunks after the model's latency: 4 that call ``ls`` with a few words of text, then
its report. The wall time is from the prompt sent to the main agent's answer.

- *without the UI*: the app and its conversation, nothing subscribed to the bus;
- *with the UI*: the same under :class:`~nestor.cli.tui.app.NestorTui`, running headless at
  120x40 (Textual's test driver: the real compositor and widgets, no terminal), its bus handler
  queueing every event and its tick redrawing the tree, the transcript and the status bar.

The server runs in a process of its own on 127.0.0.1, as a provider does: in this one it would
take the interpreter's lock from the agents for work no real provider puts on this machine.

Two latencies: 1 s per request, the fast end of a hosted model's time to a tool call, where the
target (5%) is judged; and 100 ms, a stress where the agents alone keep a core busy, so that
whatever the UI does adds to their time (its figure is printed for what it is). The UI's own work
is also printed as CPU time per second of the run.
"""

from __future__ import annotations

import asyncio
import functools
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nestor.app import App
from nestor.cli.options import CommonOptions
from nestor.config.loading import load_settings
from nestor.testing import ScriptedOpenAIServer, ServerReply, ServerToolCall, first_user_text

AGENTS = 20
STEPS = 5  # requests per sub-agent: 4 tool calls, then the report
CHUNKS = 10
TARGET = 1.05
# (latency in seconds, interleaved runs of each kind, judged against the target)
SCENARIOS = ((1.0, 5, True), (0.1, 9, False))


def answer(body: dict[str, Any], *, latency: float) -> ServerReply:
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
            return ServerReply(text=text, tool_calls=(call,), chunks=CHUNKS, delay=latency)
        return ServerReply(
            text=f"{prompt[:8]}: found it after {done} look-ups.", chunks=CHUNKS, delay=latency
        )
    return ServerReply(text="A title")  # the session's title


def serve(latency: float) -> None:
    """Run the scripted server (in the process started by :class:`Provider`) until stdin closes."""
    replies: list[Callable[[dict[str, Any]], ServerReply]] = [functools.partial(answer, latency=latency)]
    with ScriptedOpenAIServer(replies * 100_000) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


class Provider:
    """The scripted server in a process of its own, as a real provider is; ``base_url`` once started."""

    def __init__(self, latency: float) -> None:
        command = [sys.executable, __file__, "--serve", str(latency)]
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        self.base_url = self._process.stdout.readline().strip()
        if not self.base_url:
            self.close()
            raise RuntimeError("the scripted server did not start")

    def close(self) -> None:
        """Stop the server."""
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(timeout=30)


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

    The CPU seconds are this process's: what the UI adds to them is its own work.
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


Runs = list[tuple[float, float]]


async def measure(latency: float, repeats: int) -> tuple[Runs, Runs]:
    """Wall and CPU seconds without and with the UI, ``repeats`` interleaved runs each (after a warm-up)."""
    without: Runs = []
    with_ui: Runs = []
    provider = Provider(latency)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            await run_once(root / "warm-a", provider.base_url, with_ui=False)
            await run_once(root / "warm-b", provider.base_url, with_ui=True)
            for index in range(repeats):  # interleaved, so both see the same machine load
                without.append(await run_once(root / f"without-{index}", provider.base_url, with_ui=False))
                with_ui.append(await run_once(root / f"with-{index}", provider.base_url, with_ui=True))
    finally:
        provider.close()
    return without, with_ui


def report(latency: float, without: Runs, with_ui: Runs, *, judged: bool) -> float:
    """Print one scenario's figures; return the ratio of the median wall times."""
    without_s, with_s = statistics.median(w for w, _ in without), statistics.median(w for w, _ in with_ui)
    without_cpu = statistics.median(c for _, c in without)
    with_cpu = statistics.median(c for _, c in with_ui)
    ratio = with_s / without_s
    kind = "target" if judged else "stress: no target, the agents alone keep a core busy"
    print(f"  {latency * 1000:.0f} ms per request ({kind}); median of {len(without)} interleaved runs")
    for label, median, runs in (
        ("without the UI", without_s, without),
        ("with the UI (headless)", with_s, with_ui),
    ):
        print(f"    {label:26}{median:8.3f} s   (runs: {', '.join(f'{wall:.3f}' for wall, _ in runs)})")
    verdict = ("PASS" if ratio <= TARGET else "FAIL") if judged else "(not judged)"
    print(f"    {'ratio with / without':26}{ratio:8.3f} x   target <= {TARGET:.2f}x  {verdict}")
    ui_ms = max(with_cpu - without_cpu, 0.0) * 1000 / with_s
    print(
        f"    {'CPU without / with':26}{without_cpu:8.3f} s / {with_cpu:.3f} s   "
        f"(the UI's own work: {ui_ms:.0f} ms of CPU per second of the run)"
    )
    return ratio


def main() -> float:
    """Print the figures of each scenario; return the judged scenario's ratio."""
    print(f"TUI: {AGENTS} parallel sub-agents, the agents' wall time without and with the UI attached")
    print(
        f"  ({STEPS} streamed requests each over loopback HTTP to a server in its own process; "
        "real SQLite; 120x40)"
    )
    judged_ratio = 0.0
    for latency, repeats, judged in SCENARIOS:
        without, with_ui = asyncio.run(measure(latency, repeats))
        ratio = report(latency, without, with_ui, judged=judged)
        judged_ratio = ratio if judged else judged_ratio
    return judged_ratio


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(float(sys.argv[2]))
    else:
        main()
