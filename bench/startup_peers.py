"""Start-up and the first request's size, nestor beside its peers, each against nestor's scripted servers.

Every tool (nestor on each API; Claude Code, Codex CLI, OpenCode, Gemini CLI, Kimi Code, aider,
mini-swe-agent; see ``peers.py``) runs a one-word headless prompt against a scripted server on
127.0.0.1 (OpenAI's, Anthropic's or Gemini's API) that answers "ok" at once (a request for JSON of a
schema, such as Gemini CLI's model router, gets an object of that schema), after one warm-up, in
:data:`RUNS` interleaved rounds (each round runs every tool once, so load on the shared machine
falls on all alike). Per tool, medians of:

- ``--version``: wall time of ``<tool> --version``;
- first request: from spawning the prompt's process to the server receiving its first model request;
- whole prompt: from spawning to the process exiting (what a script waits for);
- peak PSS: the most memory at once, sampled every 20 ms, of the process tree and of every process
  already running with the tool's home (a warm server such as nestor's, with the children it forks
  to serve the prompt), as proportional set sizes: a page shared by N processes counts 1/N in each,
  so a forked child's pages shared with its server count once (resident sizes would count them
  twice);
- tokens of the first request that carries tools (the main agent's turn; the first request when none
  does): its system prompt and tool definitions, and the whole request body. One counter for
  all (``nestor.testing.request_tokens``): characters / 4 (tiktoken is installed here, but its
  encodings would have to be downloaded).

Ratios are to nestor on the same API (nestor runs on all three: ``GOOGLE_GEMINI_BASE_URL`` points
its Google provider at the Gemini server).
Peers install into ``$XDG_CACHE_HOME/nestor/bench-peers`` (``NESTOR_BENCH_PEERS`` overrides it);
one that cannot be installed or pointed at loopback is skipped with a note.
``python bench/startup_peers.py [NAME ...]`` runs only the named tools (nestor always runs).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the evals' installers

from nestor.testing import (
    AnthropicReply,
    ScriptedAnthropicServer,
    ScriptedGeminiServer,
    ScriptedOpenAIServer,
    ServerReply,
)
from nestor.testing.request_tokens import count_tokens, fixed_text, main_request, tool_definitions
from peers import Peer, Servers, Skipped, all_peers

RUNS = 5
TIMEOUT_S = 120.0
SAMPLE_S = 0.02


def residents(home: Path) -> list[int]:
    """The eldest processes running with ``home`` as HOME: what a tool left running (a warm server)."""
    marker = f"HOME={home}".encode()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return [pid for pid in found if _parent(pid) not in found]  # tree_pss counts the descendants


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def tree_pss(pid: int) -> int:
    """Proportional set size in bytes of ``pid`` and all its descendants now (0 once gone)."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            total += _pss(current)
            for task in Path(f"/proc/{current}/task").iterdir():
                stack.extend(int(child) for child in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return total


def _pss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return 0


@dataclass
class Sample:
    """One prompt run of one tool."""

    first_request_s: float | None
    wall_s: float
    peak_pss: int
    bodies: list[dict[str, Any]]
    returncode: int


@dataclass
class Figures:
    """Every sample of one tool."""

    version_s: list[float | None] = field(default_factory=list[float | None])
    samples: list[Sample] = field(default_factory=list[Sample])
    note: str = ""


_SCHEMA_VALUES: dict[str, Any] = {"STRING": "ok", "INTEGER": 1, "NUMBER": 1, "BOOLEAN": False}


def gemini_answer(request: dict[str, Any]) -> ServerReply:
    """Answer "ok", or a request for JSON of a schema (Gemini CLI's model router) with an object of it.

    The object holds the schema's required properties, each with a value of its type, so the client
    goes on as after a real answer rather than through its error path.
    """
    schema = (request.get("generationConfig") or {}).get("responseJsonSchema") or {}
    if not schema:
        return ServerReply(text="ok")
    properties = schema.get("properties") or {}
    answer = {
        name: _SCHEMA_VALUES.get(str(properties.get(name, {}).get("type", "")).upper(), "ok")
        for name in schema.get("required") or []
    }
    return ServerReply(text=json.dumps(answer))


class Recorder:
    """The three scripted servers, answering "ok" to everything, and what each run sent them."""

    def __init__(self) -> None:
        self.openai = ScriptedOpenAIServer([ServerReply(text="ok")] * 100_000)
        self.anthropic = ScriptedAnthropicServer([AnthropicReply(text="ok")] * 100_000)
        self.gemini = ScriptedGeminiServer([gemini_answer] * 100_000)

    def _server(self, peer: Peer) -> ScriptedOpenAIServer | ScriptedAnthropicServer | ScriptedGeminiServer:
        return {"openai": self.openai, "anthropic": self.anthropic, "gemini": self.gemini}[peer.api]

    def since(self, peer: Peer, count: int, started: float) -> tuple[float | None, list[dict[str, Any]]]:
        """Seconds from ``started`` to the first request after the first ``count``, and their bodies."""
        server = self._server(peer)
        times, bodies = server.request_times[count:], server.requests[count:]
        return (times[0] - started if times else None), list(bodies)

    def count(self, peer: Peer) -> int:
        """Requests its server has received so far."""
        return len(self._server(peer).requests)


def run_prompt(peer: Peer, home: Path, project: Path, recorder: Recorder) -> Sample:
    """One headless prompt: time to the first request, wall time, peak PSS of the tree and residents."""
    before = recorder.count(peer)
    resident = residents(home)
    with (home / "prompt.log").open("ab") as log:
        started = time.time()
        process = subprocess.Popen(
            peer.prompt_command,
            cwd=project,
            env=peer.prepared.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        peak = 0
        deadline = time.monotonic() + TIMEOUT_S
        while process.poll() is None and time.monotonic() < deadline:
            peak = max(peak, tree_pss(process.pid) + sum(tree_pss(pid) for pid in resident))
            time.sleep(SAMPLE_S)
        wall = time.time() - started
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise Skipped(f"no exit within {TIMEOUT_S:.0f} s; see {home / 'prompt.log'}")
    _end_group(process.pid)  # a server a peer left behind in its session
    first, bodies = recorder.since(peer, before, started)
    if not bodies:
        raise Skipped(
            f"sent no request to the scripted server (exit {process.returncode}); see {home / 'prompt.log'}"
        )
    return Sample(first, wall, peak, bodies, process.returncode)


def _end_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def version_time(peer: Peer, project: Path) -> float | None:
    """Wall seconds of ``<tool> --version``; None for a tool without one (mini-swe-agent)."""
    started = time.perf_counter()
    done = subprocess.run(
        peer.version_command, cwd=project, env=peer.prepared.env, capture_output=True, timeout=60
    )
    return time.perf_counter() - started if done.returncode == 0 else None


def measure(peers: list[Peer], root: Path, cache: Path, recorder: Recorder) -> dict[str, Figures]:
    """Install every peer, warm each up, then run :data:`RUNS` interleaved rounds."""
    servers = Servers(recorder.openai.base_url, recorder.anthropic.base_url, recorder.gemini.base_url)
    project = root / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    figures = {peer.name: Figures() for peer in peers}
    live: list[Peer] = []
    for peer in peers:
        home = root / "homes" / peer.name.replace(" ", "-")
        home.mkdir(parents=True)
        try:
            peer.ready(cache, home, servers)
            run_prompt(peer, home, project, recorder)  # warm-up: caches, first-run files
            live.append(peer)
        except Skipped as skipped:
            figures[peer.name].note = str(skipped)
    for _ in range(RUNS):
        for peer in list(live):
            home = root / "homes" / peer.name.replace(" ", "-")
            try:
                figures[peer.name].version_s.append(version_time(peer, project))
                figures[peer.name].samples.append(run_prompt(peer, home, project, recorder))
            except (Skipped, subprocess.SubprocessError) as failed:
                figures[peer.name].note = str(failed).splitlines()[0]
                live.remove(peer)
    return figures


def _ratio(value: float | None, base: float | None) -> str:
    return f"{value / base:.2f}x" if value is not None and base else "-"


def table(peers: list[Peer], figures: dict[str, Figures]) -> list[str]:
    """The Markdown table: medians, each with its ratio to nestor on the same API."""
    rows = [
        "| tool | API | `--version` ms | 1st request ms | whole prompt ms | peak PSS MiB "
        "| prompt+tools tokens | whole 1st request tokens | tools |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    medians: dict[str, list[float | None]] = {}
    for peer in peers:
        got = figures[peer.name]
        if not got.samples:
            continue
        firsts = [s.first_request_s for s in got.samples if s.first_request_s is not None]
        body = main_request(got.samples[-1].bodies) or {}
        medians[peer.name] = [
            statistics.median(versions)
            if (versions := [v for v in got.version_s if v is not None])
            else None,
            statistics.median(firsts) if firsts else None,
            statistics.median(s.wall_s for s in got.samples),
            statistics.median(s.peak_pss for s in got.samples) / 2**20,
            count_tokens(fixed_text(body)),
            count_tokens(json.dumps(body)),
            len(tool_definitions(body)),
        ]
    for peer in peers:
        if peer.name not in medians:
            continue
        mine, base = medians[peer.name], medians.get(f"nestor ({peer.api})", [None] * 7)
        cells = [
            f"{mine[0] * 1000:.0f} ({_ratio(mine[0], base[0])})" if mine[0] is not None else "-",
            f"{mine[1] * 1000:.0f} ({_ratio(mine[1], base[1])})" if mine[1] is not None else "-",
            f"{mine[2] * 1000:.0f} ({_ratio(mine[2], base[2])})" if mine[2] is not None else "-",
            f"{mine[3]:.0f} ({_ratio(mine[3], base[3])})" if mine[3] is not None else "-",
            f"{mine[4]:,.0f} ({_ratio(mine[4], base[4])})",
            f"{mine[5]:,.0f} ({_ratio(mine[5], base[5])})",
            f"{mine[6]:.0f}",
        ]
        rows.append(f"| {peer.name} | {peer.api} | " + " | ".join(cells) + " |")
    return rows


def cache_dir() -> Path:
    """Where peers are installed: ``NESTOR_BENCH_PEERS``, else ``$XDG_CACHE_HOME/nestor/bench-peers``."""
    named = os.environ.get("NESTOR_BENCH_PEERS")
    if named:
        return Path(named)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nestor" / "bench-peers"


def main(names: list[str] | None = None) -> None:
    """Measure nestor and its peers side by side and print the table and the notes."""
    peers = [p for p in all_peers() if not names or p.name.startswith("nestor") or p.name in names]
    cache = cache_dir()
    recorder = Recorder()
    with recorder.openai, recorder.anthropic, recorder.gemini, tempfile.TemporaryDirectory() as tmp:
        try:
            figures = measure(peers, Path(tmp), cache, recorder)
        finally:
            for home in (Path(tmp) / "homes").glob("*"):
                for pid in residents(home):  # nestor's warm servers, whose homes are going
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGTERM)
    print(
        f"Start-up vs peers (median of {RUNS} interleaved runs after a warm-up; "
        "ratios to nestor on the same API)"
    )
    print(f"  peers installed in {cache}; tokens counted as characters / 4")
    for row in table(peers, figures):
        print(row)
    for peer in peers:
        note = figures[peer.name].note
        if note:
            print(f"  {peer.name}: skipped: {note}")


if __name__ == "__main__":
    main(sys.argv[1:] or None)
