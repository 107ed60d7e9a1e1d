"""Loading a 10,000-message session: what ``--resume`` and ``nestor sessions show --json`` read.

The session is stored with nestor's own ``MessageStore`` in a real SQLite file: a prompt, then
turns of a response (text and a tool call) and its tool result, with a compaction summary every
500 messages keeping the last 20, as a long session gets from automatic compaction.

Side by side, median of 5 interleaved runs:

- raw SQLite: fetching every row of the session, the floor of any load;
- the resume load before: every message decoded by pydantic-ai, then the visible part kept;
- the resume load now (``load_visible_history``): SQLite finds the latest summary in the stored
  JSON, and only the messages from the first kept one on are decoded;
- the same session without any summary, which still decodes every message;
- the ``show --json`` export before (decode, re-encode, indented ``json.dumps``) and now (the
  stored JSON as it is, one message per line).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from nestor.cli.sessions_cmd import export_json, session_to_dict
from nestor.core.usage import Usage
from nestor.runtime.features.compaction import summary_message
from nestor.runtime.kernel.compaction_mark import CompactionMark
from nestor.runtime.kernel.history import load_visible_history, visible_history
from nestor.store import Database, MessageStore, SessionStore, open_database

MESSAGES = 10_000
SUMMARY_EVERY = 500
KEPT = 20


def store_session(database: Database, root: Path, *, summaries: bool) -> str:
    """Store a session of :data:`MESSAGES` messages; return its id."""
    sessions, messages = SessionStore(database), MessageStore(database)
    session_id = sessions.create(str(root)).id
    history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("fix the failing tests")])]
    step = 0
    while len(history) < MESSAGES:
        if summaries and len(history) % SUMMARY_EVERY == 0:
            mark = CompactionMark(
                kept_messages=KEPT,
                summarized_messages=SUMMARY_EVERY,
                trigger="threshold",
                tokens_before=150_000,
            )
            history.append(summary_message("## Goal\nfix the tests\n" + "details " * 200, mark))
            continue
        if isinstance(history[-1], ModelRequest):
            call = ToolCallPart("view", {"path": f"src/module_{step}.py"}, tool_call_id=f"call_{step}")
            history.append(ModelResponse(parts=[TextPart(f"Looking at module {step}. " * 10), call]))
        else:
            content = "".join(f"{n:>5}\tdef function_{n}(x):\n" for n in range(40))
            history.append(ModelRequest(parts=[ToolReturnPart("view", content, tool_call_id=f"call_{step}")]))
            step += 1
    for message in history[:MESSAGES]:
        usage = (
            Usage(input_tokens=1200, output_tokens=80, requests=1)
            if isinstance(message, ModelResponse)
            else None
        )
        messages.append(session_id, message, usage=usage)
    return session_id


def export_before(sessions: SessionStore, messages: MessageStore, session_id: str) -> str:
    """``show --json`` as it was: decode every message, re-encode it, indent the whole document."""
    from nestor.runtime.kernel.history import compaction_mark

    rows: list[dict[str, Any]] = []
    for record in messages.list_records(session_id):
        mark = compaction_mark(record.message)
        rows.append(
            {
                "seq": record.seq,
                "kind": record.kind,
                "created_at": record.created_at,
                "usage": record.usage.to_dict() if record.usage else None,
                "compaction": None if mark is None else mark.to_metadata()["nestor"]["compaction"],
                "message": ModelMessagesTypeAdapter.dump_python([record.message], mode="json")[0],
            }
        )
    return json.dumps({"session": session_to_dict(sessions.get(session_id)), "messages": rows}, indent=2)


def median_ms(function: Callable[[], object], times: list[float]) -> None:
    started = time.perf_counter()
    function()
    times.append((time.perf_counter() - started) * 1000)


def measure(repeats: int = 5) -> dict[str, float]:
    """Return the median milliseconds of each way to load the session."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with open_database(root / "nestor.db") as database:
            compacted = store_session(database, root, summaries=True)
            plain = store_session(database, root, summaries=False)
            sessions, messages = SessionStore(database), MessageStore(database)
            fetch = "SELECT seq, data FROM messages WHERE session_id = ? ORDER BY seq"
            assert load_visible_history(messages, compacted) == visible_history(messages.list(compacted))
            assert json.loads(
                export_json(sessions.get(compacted), messages.export_rows(compacted))
            ) == json.loads(export_before(sessions, messages, compacted))
            cases: dict[str, Callable[[], object]] = {
                "raw SQLite fetch": lambda: database.fetch_all(fetch, (compacted,)),
                "resume load before": lambda: visible_history(messages.list(compacted)),
                "resume load now": lambda: load_visible_history(messages, compacted),
                "no summary: load now": lambda: load_visible_history(messages, plain),
                "show --json before": lambda: export_before(sessions, messages, compacted),
                "show --json now": lambda: export_json(
                    sessions.get(compacted), messages.export_rows(compacted)
                ),
            }
            samples: dict[str, list[float]] = {name: [] for name in cases}
            for _ in range(repeats):  # interleaved, so every case sees the same machine load
                for name, case in cases.items():
                    median_ms(case, samples[name])
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> dict[str, float]:
    """Print the table and return its figures."""
    figures = measure()
    raw = figures["raw SQLite fetch"]
    print(
        f"Loading a {MESSAGES:,}-message session "
        f"(a summary every {SUMMARY_EVERY}; median of 5 interleaved runs)"
    )
    print(f"  {'':<22} {'time':>10}  {'x raw SQLite':>12}")
    for name, value in figures.items():
        print(f"  {name:<22} {value:>7.1f} ms  {value / raw:>12.1f}")
    print(
        f"  resume load: {figures['resume load before'] / figures['resume load now']:.1f}x faster "
        "(target < 150 ms); "
        f"show --json: {figures['show --json before'] / figures['show --json now']:.1f}x faster"
    )
    print("  a session that was never compacted still decodes every message (pydantic-ai's validation)")
    return figures


if __name__ == "__main__":
    main()
