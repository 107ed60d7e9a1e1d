"""The cost of compaction over a 200-turn session: tokens sent, summaries paid for, time spent.

Every turn is a user prompt, one call to nestor's real ``view`` tool on a generated source file of a
few thousand characters in a temporary project, and an answer. The agent's model is a scripted
``ScriptedModel`` that reports honest usage: its input tokens are nestor's own estimate of exactly
the messages it received, plus the instructions and tool definitions sent with them (so they grow
with what was really sent, and shrink when compaction shortens the history). The summariser is a
second scripted model that writes a ~1.5k-token Markdown summary and reports its input the same
way, from the transcript it was given. Messages go to a real SQLite store, events to an EventBus.

The same 200 turns run in one process, side by side (three times each, interleaved, after a
short warm-up; token figures are deterministic, times are medians):

- (a) auto compaction with a 32k-token window (threshold 0.85, recent turns keep 0.2 of it);
- (b) no compaction (``context=None``), as if the window were unlimited.

How to read it: (a) should keep its largest request under the window while (b) grows without
bound; the input-token ratio (a)/(b) is what compaction saves, the summariser's tokens are what it
costs. Both models answer instantly, so wall times and the per-compaction time are nestor's own
work (store, events, token accounting, transcript rendering, pydantic-ai's model layer), not a
provider's latency; the scripted models' own steps are timed and shown apart.
``Compacted.duration_s`` covers the summary request, rendering the transcript and storing the
summary; choosing the cut (``find_cut``) happens before its clock starts, so it is timed apart,
on copies of the histories the session had when each compaction began.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from random import Random

from pydantic_ai.messages import ModelMessage, UserPromptPart
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.usage import RequestUsage

from nestor.bus import EventBus
from nestor.core.events import Compacted, CompactionStarted, Event, RequestFinished
from nestor.core.tokens import estimate_tokens
from nestor.permissions import PermissionPolicy
from nestor.runtime.features.compaction import Compaction, SummaryModel, find_cut
from nestor.runtime.kernel.context import ContextPolicy, fixed_tokens, messages_tokens
from nestor.runtime.kernel.hooks import BudgetHook, Budgets, LoopGuardHook
from nestor.runtime.kernel.loop import SessionAgent
from nestor.runtime.kernel.setup import AgentSetup
from nestor.store.db import open_database
from nestor.store.messages import MessageStore
from nestor.store.sessions import SessionStore
from nestor.testing import ScriptedModel, Step, call, last_tool_results, reply
from nestor.tools.view import ViewTool

TURNS = 200
CONTEXT_WINDOW = 32_000
SUMMARISER_WINDOW = 200_000
SUMMARY_CHARS = 6_000  # ~1.5k tokens
FILES = 60
REPEATS = 3

_WORDS = (
    "session",
    "store",
    "message",
    "usage",
    "budget",
    "token",
    "window",
    "history",
    "summary",
    "request",
    "response",
    "tool",
    "result",
    "permission",
    "policy",
    "sandbox",
    "agent",
    "spec",
    "registry",
    "provider",
    "retry",
    "stream",
    "event",
    "bus",
    "cursor",
    "offset",
)


def _identifier(rng: Random, parts: int = 2) -> str:
    return "_".join(rng.choice(_WORDS) for _ in range(parts))


def source_file(index: int) -> str:
    """A deterministic, plausible Python module of roughly 2.5 to 5k characters."""
    rng = Random(index)
    name = _identifier(rng)
    lines = [f'"""The {name.replace("_", " ")} helpers: {" ".join(rng.sample(_WORDS, 8))}."""', ""]
    lines += ["from __future__ import annotations", "", "import json", "from pathlib import Path", ""]
    lines += [f"LIMIT_{_identifier(rng).upper()} = {rng.randrange(16, 4096)}", "", ""]
    lines += [f"class {name.title().replace('_', '')}:", f'    """Keeps the {name} of one session."""', ""]
    target = rng.randrange(2_500, 5_000)
    while sum(len(line) + 1 for line in lines) < target:
        method, arg, other = _identifier(rng), _identifier(rng, 1), _identifier(rng)
        lines += [
            f"    def {method}(self, {arg}: str, limit: int = {rng.randrange(1, 100)}) -> list[str]:",
            f'        """Return the {method.replace("_", " ")} for ``{arg}``, at most ``limit`` of them."""',
            f"        found = [item for item in self.{other} if {arg} in item]",
            f"        if len(found) > limit:  # {' '.join(rng.sample(_WORDS, 5))}",
            f"            raise ValueError(f'{{len(found)}} {other} for {{{arg}!r}}, over {{limit}}')",
            "        return sorted(found, key=lambda item: json.dumps(item))[:limit]",
            "",
        ]
    return "\n".join(lines) + "\n"


def file_path(turn: int) -> str:
    """The file the model reads at ``turn`` (files are read again, as in real sessions)."""
    return f"src/app/module_{turn * 7 % FILES:02d}.py"


def user_prompt(turn: int) -> str:
    """A user prompt of a few lines."""
    rng = Random(1_000 + turn)
    return (
        f"Turn {turn}: look at {file_path(turn)} and tell me how {_identifier(rng)} handles "
        f"{_identifier(rng)} when the {_identifier(rng)} is empty. Keep the {_identifier(rng)} "
        "behaviour as it is; I only want to understand it before we change anything."
    )


def answer(turn: int) -> str:
    """An assistant answer of a few hundred characters."""
    rng = Random(2_000 + turn)
    sentences = [
        f"In {file_path(turn)}, `{_identifier(rng)}` filters `{_identifier(rng)}` by its argument "
        f"and raises ValueError past the limit ({rng.randrange(1, 100)} by default).",
        f"An empty {_identifier(rng, 1)} matches every item, so the limit is what stops it.",
        f"Nothing else calls `{_identifier(rng)}`; the sort key is the JSON text of each item.",
        f"If we change it, the test for `{_identifier(rng)}` is the one to update first.",
    ]
    return " ".join(sentences * 2)


@dataclass
class ModelClock:
    """What the scripted models cost: their own steps' seconds, which wall times include.

    A real provider counts tokens on its side; the scripted models count them here, so the count is
    cached per message to keep the fake's share of the wall time small and visible.
    """

    seconds: float = 0.0
    _tokens: dict[int, tuple[ModelMessage, int]] = field(default_factory=dict[int, tuple[ModelMessage, int]])

    def usage(self, messages: list[ModelMessage], info: AgentInfo, output: str) -> RequestUsage:
        """The usage of a request sending ``messages``, instructions and tools, answered by ``output``."""
        sent = fixed_tokens(info.instructions or "", info.function_tools)
        for message in messages:
            # The message is kept in the value, so its id cannot be reused by another object.
            cached = self._tokens.get(id(message))
            if cached is None:
                cached = self._tokens[id(message)] = (message, messages_tokens([message]))
            sent += cached[1]
        return RequestUsage(input_tokens=sent, output_tokens=estimate_tokens(output))


def agent_model(clock: ModelClock) -> ScriptedModel:
    """The coding model: on a prompt it calls ``view``, on the tool's result it answers."""
    turn = -1

    def step(messages: list[ModelMessage], info: AgentInfo) -> Step:
        nonlocal turn
        started = time.perf_counter()
        if last_tool_results(messages):
            text = answer(turn)
            decided = reply(text, usage=clock.usage(messages, info, text))
        else:
            turn += 1
            args = {"path": file_path(turn)}
            decided = call("view", args, usage=clock.usage(messages, info, f"view{args}"))
        clock.seconds += time.perf_counter() - started
        return decided

    return ScriptedModel([step] * (2 * TURNS), model_name="bench-agent")


def summariser_model(clock: ModelClock) -> ScriptedModel:
    """A summariser writing a Markdown summary of ~1.5k tokens that names the files it saw."""

    def step(messages: list[ModelMessage], info: AgentInfo) -> Step:
        started = time.perf_counter()
        prompt = "".join(
            part.content
            for message in messages
            for part in message.parts
            if isinstance(part, UserPromptPart) and isinstance(part.content, str)
        )
        files = sorted(set(re.findall(r"src/app/module_\d+\.py", prompt)))
        head = (
            "## Goal\nUnderstand how the app modules filter their items before changing anything.\n\n"
            "## Decisions\nKeep current behaviour; only read code for now.\n\n"
            f"## Files touched\n{chr(10).join(f'- {name}: read, filters and limits noted' for name in files)}"
            "\n\n## Work done\n"
        )
        filler = " ".join(_WORDS)
        work = "".join(f"- Read and explained a module: {filler}.\n" for _ in range(SUMMARY_CHARS // 150))
        tail = "\n## Open todos\n- None yet.\n\n## What remains\nWait for the user's next question.\n"
        text = (head + work)[: SUMMARY_CHARS - len(tail)] + tail
        decided = reply(text, usage=clock.usage(messages, info, text))
        clock.seconds += time.perf_counter() - started
        return decided

    return ScriptedModel([step] * TURNS, model_name="bench-summariser")


@dataclass
class SessionFigures:
    """What one session measured."""

    wall_s: float = 0.0
    request_inputs: list[int] = field(default_factory=list[int])
    compactions: list[Compacted] = field(default_factory=list[Compacted])
    histories: list[list[ModelMessage]] = field(default_factory=list[list[ModelMessage]])
    agent_model: ModelClock = field(default_factory=ModelClock)
    summariser: ModelClock = field(default_factory=ModelClock)


async def run_session(root: Path, label: str, *, compact: bool, turns: int = TURNS) -> SessionFigures:
    """Play ``turns`` turns in a fresh store, with or without auto compaction."""
    database = open_database(root / f"{label}.db")
    sessions, messages = SessionStore(database), MessageStore(database)
    figures = SessionFigures()
    bus = EventBus()
    setup = AgentSetup(
        model=agent_model(figures.agent_model),
        model_name="bench:agent",
        system_prompt=system_prompt(),
        tools=[ViewTool()],
        sessions=sessions,
        messages=messages,
        bus=bus,
        policy=PermissionPolicy(project_root=str(root)),
        asker=None,
        project_root=root,
        hooks=[BudgetHook(Budgets()), LoopGuardHook()],  # the agent recipe's, as every agent's
        priced=False,
        context=ContextPolicy(context_window=CONTEXT_WINDOW) if compact else None,
        compactor=Compaction(
            SummaryModel(
                model=summariser_model(figures.summariser),
                name="bench:summariser",
                settings=None,
                priced=False,
                context_window=SUMMARISER_WINDOW,
            )
        ),
    )
    agent = SessionAgent(sessions.create(str(root)).id, setup, history=[])

    def record(event: Event) -> None:
        if isinstance(event, RequestFinished):
            figures.request_inputs.append(event.usage.input_tokens)
        elif isinstance(event, CompactionStarted):
            figures.histories.append(list(agent.history))
        elif isinstance(event, Compacted):
            figures.compactions.append(event)

    bus.subscribe(record)
    started = time.perf_counter()
    for turn in range(turns):
        result = await agent.run(user_prompt(turn))
        assert result.stop_reason == "completed", result
    figures.wall_s = time.perf_counter() - started
    database.close()
    return figures


def system_prompt() -> str:
    """A stand-in of about 2k tokens for nestor's assembled system prompt."""
    rng = Random(0)
    rules = [
        f"- When the {_identifier(rng)} changes, check the {_identifier(rng)} first." for _ in range(110)
    ]
    return "You are nestor, a coding agent working in the user's repository.\n\n" + "\n".join(rules)


def write_project(root: Path) -> None:
    """Write the files the model reads."""
    for index in range(FILES):
        path = root / f"src/app/module_{index:02d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source_file(index), encoding="utf-8")


async def measure(repeats: int = REPEATS) -> tuple[list[SessionFigures], list[SessionFigures]]:
    """Warm up, then run the session with and without compaction, ``repeats`` times each."""
    compacting: list[SessionFigures] = []
    unlimited: list[SessionFigures] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_project(root)
        await run_session(root, "warm-up", compact=True, turns=30)
        for index in range(repeats):  # interleaved, so both see the same machine load
            compacting.append(await run_session(root, f"compacting-{index}", compact=True))
            unlimited.append(await run_session(root, f"unlimited-{index}", compact=False))
    for runs in (compacting, unlimited):  # the scripts are deterministic: only times may differ
        assert len({tuple(run.request_inputs) for run in runs}) == 1
    return compacting, unlimited


def _ms(seconds: list[float]) -> str:
    if not seconds:
        return "n/a"
    return f"mean {statistics.mean(seconds) * 1000:.2f} ms, max {max(seconds) * 1000:.2f} ms"


def _own_seconds(run: SessionFigures) -> float:
    return run.wall_s - run.agent_model.seconds - run.summariser.seconds


def _find_cut_seconds(runs: list[SessionFigures]) -> list[float]:
    keep = ContextPolicy(context_window=CONTEXT_WINDOW).keep_recent_tokens
    samples: list[float] = []
    for history in (history for run in runs for history in run.histories):
        started = time.perf_counter()
        find_cut(history, keep)
        samples.append(time.perf_counter() - started)
    return samples


def main() -> tuple[list[SessionFigures], list[SessionFigures]]:
    """Print the table and return the figures of every session."""
    compacting, unlimited = asyncio.run(measure())
    a, b = compacting[0], unlimited[0]
    count = len(a.compactions)
    per = max(count, 1)
    summary_in = sum(event.usage.input_tokens for event in a.compactions)
    summary_out = sum(event.usage.output_tokens for event in a.compactions)
    sent_a, sent_b = sum(a.request_inputs), sum(b.request_inputs)
    total_a = sent_a + summary_in
    big_a, big_b = max(a.request_inputs), max(b.request_inputs)
    wall_a = statistics.median(run.wall_s for run in compacting)
    wall_b = statistics.median(run.wall_s for run in unlimited)
    own_a = statistics.median(_own_seconds(run) for run in compacting)
    own_b = statistics.median(_own_seconds(run) for run in unlimited)
    events = [event for run in compacting for event in run.compactions]
    summariser_s = [run.summariser.seconds / per for run in compacting]
    print(f"Compaction over a {TURNS}-turn session, {CONTEXT_WINDOW:,}-token window")
    print(f"  (scripted models, real SQLite; times: median of {len(compacting)} interleaved runs)")
    print(f"  {'':36}{'(a) compaction':>15}{'(b) none':>15}{'a / b':>8}")
    print(f"  {'compactions':36}{count:>15}{len(b.compactions):>15}")
    print(f"  {'agent requests':36}{len(a.request_inputs):>15}{len(b.request_inputs):>15}")
    print(f"  {'input tokens sent by the agent':36}{sent_a:>15,}{sent_b:>15,}{sent_a / sent_b:>8.3f}")
    print(f"  {'  + the summariser input':36}{total_a:>15,}{sent_b:>15,}{total_a / sent_b:>8.3f}")
    print(f"  {'largest request (input tokens)':36}{big_a:>15,}{big_b:>15,}{big_a / big_b:>8.3f}")
    print(f"  {'wall time of the session':36}{wall_a:>13.2f} s{wall_b:>13.2f} s{wall_a / wall_b:>8.2f}")
    print(f"  {'  without the scripted models':36}{own_a:>13.2f} s{own_b:>13.2f} s{own_a / own_b:>8.2f}")
    print(
        f"  summariser tokens: in {summary_in:,} / out {summary_out:,} in total, "
        f"in {summary_in // per:,} / out {summary_out // per:,} per compaction"
    )
    if count:
        before = statistics.mean(event.tokens_before for event in a.compactions)
        after = statistics.mean(event.tokens_after for event in a.compactions)
        print(f"  request size around a compaction: {before:,.0f} -> {after:,.0f} tokens (mean)")
    print(
        f"  nestor's time per compaction (Compacted.duration_s, {len(events)} samples): "
        f"{_ms([event.duration_s for event in events])}"
    )
    print(f"    of which the scripted summariser's step: {statistics.mean(summariser_s) * 1000:.2f} ms mean")
    print(f"    plus find_cut, before duration_s starts: {_ms(_find_cut_seconds(compacting))}")
    print(f"  target: (a)'s largest request under the window ({CONTEXT_WINDOW:,} tokens)")
    return compacting, unlimited


if __name__ == "__main__":
    main()
