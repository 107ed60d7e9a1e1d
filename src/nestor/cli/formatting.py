"""Small text formatters shared by the terminal outputs: durations, counts, previews, summaries."""

from __future__ import annotations

from typing import Any

from nestor.core.events import AgentFinished, Compacted
from nestor.core.permission import PermissionRequest
from nestor.core.usage import Usage, format_cost, format_tokens

_ARG_KEYS = ("command", "path", "pattern", "url", "query", "file_path", "description", "prompt")
_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def spinner_frame(seconds: float) -> str:
    """The spinner's frame at ``seconds`` on some clock: eight frames a second."""
    return _SPINNER[int(seconds * 8) % len(_SPINNER)]


def format_duration(seconds: float) -> str:
    """``0.3s``, ``12s``, ``2m05s``."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s"


def counted(count: int, noun: str) -> str:
    """``1 message``, ``3 messages``: a count with its noun in the right number."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def short_args(args: dict[str, Any], limit: int = 100) -> str:
    """A tool call's arguments in one line: its main ones (command, path, ...) if it has any, else all."""
    shown = [args[key] for key in _ARG_KEYS if key in args] or list(args.values())
    text = " ".join(value if isinstance(value, str) else repr(value) for value in shown)
    return one_line(text, limit)


def one_line(text: str, limit: int) -> str:
    """The first non-blank line of ``text``, whitespace collapsed, cut to ``limit`` characters."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    line = " ".join(first.split())
    more = len(line) > limit or len([ln for ln in text.splitlines() if ln.strip()]) > 1
    if len(line) > limit:
        line = line[: max(limit - 1, 0)]
    return line + "…" if more and line else line


def turn_summary(event: AgentFinished) -> str:
    """``2 turns · 1.2k in / 340 out · $0.0042 · 3.1s`` for a finished run."""
    usage = event.usage
    turns = counted(event.num_turns, "turn")
    tokens = f"{format_tokens(usage.input_tokens)} in / {format_tokens(usage.output_tokens)} out"
    return f"{turns} · {tokens} · {format_cost(event.cost_usd)} · {format_duration(event.duration_s)}"


def compaction_line(event: Compacted) -> str:
    """One line saying what a compaction saved and what its summary cost."""
    summary = event.usage
    summarised = counted(event.summarized_messages, "message")
    return (
        f"⟳ context compacted: {format_tokens(event.tokens_before)} → {format_tokens(event.tokens_after)} "
        f"tokens; {summarised} summarised, {event.kept_messages} kept · summary "
        f"{format_tokens(summary.input_tokens)} in, {format_tokens(summary.output_tokens)} out, "
        f"{format_cost(summary.cost_usd)} · {format_duration(event.duration_s)}"
    )


def usage_summary(usage: Usage) -> str:
    """Totals of a session: requests, tokens (with cache reads) and cost, honest about unpriced ones."""
    parts = [
        counted(usage.requests, "request"),
        f"{format_tokens(usage.input_tokens)} in / {format_tokens(usage.output_tokens)} out",
    ]
    if usage.cache_read_tokens:
        parts.append(f"{format_tokens(usage.cache_read_tokens)} cache read")
    cost = format_cost(usage.cost_usd)
    if usage.cost_usd is not None and usage.unpriced_requests:
        cost += f" (+{usage.unpriced_requests} unpriced)"
    parts.append(cost)
    return " · ".join(parts)


def suggested_rule(request: PermissionRequest) -> str:
    """The allow rule that would let such calls run without asking, as ``nestor.toml`` spells it.

    ``bash(git status)``, ``write(src/app.py)``, ``fetch(https://example.com/*)``: the tool and
    what "allow for this session" covers (its grant key), or the request's target when it covers
    every call of the tool.
    """
    covered = request.grant_key if request.grant_key != "*" else request.target
    if request.tool_name in ("fetch", "web_fetch") and request.grant_key != "*":
        covered = request.grant_key.rstrip("/") + "/*"
    return f"{request.tool_name}({covered})" if covered else request.tool_name
