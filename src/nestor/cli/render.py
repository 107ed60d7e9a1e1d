"""Agent events as terminal output for the line-editor REPL.

The REPL keeps its input prompt usable while an agent runs, so everything is printed *above* the
prompt (prompt_toolkit's ``patch_stdout``) and output is append-only: nothing can be redrawn in
place the way ``rich.live`` would. Assistant text is therefore streamed block by block: each
Markdown block (paragraphs, lists, a fenced code block, ended by a blank line outside a fence) is
rendered as Markdown once it is complete, and the rest when the response ends or a tool starts.
:meth:`EventRenderer.status` says what is happening meanwhile, for the prompt's toolbar.
"""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from nestor.core.events import (
    AgentFinished,
    AgentStarted,
    Compacted,
    CompactionStarted,
    ErrorEvent,
    Event,
    PermissionAsked,
    PromptQueued,
    RequestFinished,
    Retrying,
    SessionTitled,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    ToolStarted,
)
from nestor.core.permission import PermissionRequest
from nestor.core.usage import Usage, format_cost, format_tokens

_ARG_KEYS = ("command", "path", "pattern", "url", "query", "file_path", "description", "prompt")
_ANSWER_WORDS = {"once": "allowed once", "session": "allowed for this session", "deny": "denied"}


class MarkdownBlocks:
    """Cuts streamed Markdown into pieces that render correctly on their own."""

    def __init__(self) -> None:
        self._pending = ""

    @property
    def pending(self) -> str:
        """Text received but not yet returned."""
        return self._pending

    def feed(self, text: str) -> str | None:
        """Add ``text``; return the complete blocks it finished, if any."""
        self._pending += text
        cut = _last_block_boundary(self._pending)
        if cut == 0:
            return None
        done, self._pending = self._pending[:cut], self._pending[cut:]
        return done.strip("\n") or None

    def flush(self) -> str | None:
        """Return whatever is pending (the end of a response), if anything."""
        done, self._pending = self._pending, ""
        return done.strip("\n") or None


def _last_block_boundary(text: str) -> int:
    """Offset just after the last blank line that lies outside a fenced code block (0 if none)."""
    fence = ""
    position = boundary = 0
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        position += len(line)
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = ""
        elif stripped.startswith(("```", "~~~")):
            marker = stripped[0]
            fence = marker * (len(stripped) - len(stripped.lstrip(marker)))
        elif not stripped:
            boundary = position
    return boundary


class EventRenderer:
    """Prints agent events on a Rich console; also formats the REPL's own lines.

    Args:
        console: Where to print.
        main_agent_id: The agent whose text is shown and whose runs get a summary line; events of
            other agents (sub-agents) are tagged with their id.

    """

    def __init__(self, console: Console, *, main_agent_id: str = "") -> None:
        self.console = console
        self.main_agent_id = main_agent_id
        self._text = MarkdownBlocks()
        self._thinking = False
        self._agent_types: dict[str, str] = {}
        self._asked: set[str] = set()
        self._running_tools: dict[str, str] = {}
        self._last_started_call = ""
        self._activity = ""
        self._run_started_at: float | None = None

    # -- events -----------------------------------------------------------------------------

    def handle(self, event: Event) -> None:
        """Show ``event``; an :class:`~nestor.bus.EventBus` handler."""
        if not isinstance(event, ThinkingDelta):
            self._thinking = False
        match event:
            case TextDelta():
                self._on_text(event)
            case ThinkingDelta():
                self._on_thinking(event)
            case AgentStarted():
                self._on_agent_started(event)
            case ToolStarted():
                self._on_tool_started(event)
            case ToolFinished():
                self._on_tool_finished(event)
            case PermissionAsked():
                self._on_permission(event)
            case Retrying():
                self.flush_text()
                self._activity = f"retrying (attempt {event.attempt + 1})"
                line = f"↻ retrying in {event.delay_s:.1f}s (attempt {event.attempt}): {event.reason}"
                self._print(self._tag(event.agent_id) + line, style="yellow")
            case RequestFinished():
                if event.agent_id == self.main_agent_id:
                    # One response ends here; the next one (a queued prompt's answer) starts afresh.
                    self.flush_text()
                    self._activity = "waiting for the model"
            case PromptQueued():
                self._print(f"↳ queued for the next turn: {_one_line(event.prompt, 80)}", style="dim")
            case CompactionStarted():
                self.flush_text()
                self._activity = "compacting the history"
                share = event.context_tokens / event.context_window if event.context_window else 0
                line = (
                    f"⟳ compacting the history ({event.trigger}): {format_tokens(event.context_tokens)} "
                    f"of {format_tokens(event.context_window)} tokens ({share:.0%})"
                )
                self._print(self._tag(event.agent_id) + line, style="dim")
            case Compacted():
                self._print(self._tag(event.agent_id) + compaction_line(event), style="dim")
            case SessionTitled():
                if event.agent_id == self.main_agent_id:
                    self._print(f"session title: {event.title}", style="dim")
            case AgentFinished():
                self._on_agent_finished(event)
            case ErrorEvent():
                self.flush_text()
                self.error(self._tag(event.agent_id) + event.message, event.hint)
            case _:
                pass

    def flush_text(self) -> None:
        """Print the assistant text received but not shown yet (before anything else is printed)."""
        block = self._text.flush()
        if block:
            self._print_markdown(block)

    def status(self, now: float | None = None) -> str:
        """What the main agent is doing and for how long, e.g. ``running bash · 12s``; empty when idle."""
        if self._run_started_at is None:
            return ""
        elapsed = (time.time() if now is None else now) - self._run_started_at
        return f"{self._activity} · {format_duration(max(elapsed, 0.0))}"

    def _on_text(self, event: TextDelta) -> None:
        if event.agent_id != self.main_agent_id:
            return
        self._activity = "writing"
        block = self._text.feed(event.text)
        if block:
            self._print_markdown(block)

    def _on_thinking(self, event: ThinkingDelta) -> None:
        if event.agent_id != self.main_agent_id or self._thinking:
            return
        self._thinking = True
        self._activity = "thinking"
        self.flush_text()
        self._print("✻ thinking…", style="dim italic")

    def _on_agent_started(self, event: AgentStarted) -> None:
        self._agent_types[event.agent_id] = event.agent_type
        if event.agent_id == self.main_agent_id:
            self._run_started_at = event.timestamp
            self._activity = "waiting for the model"
            return
        self.flush_text()
        description = f": {event.description}" if event.description else ""
        self._print(f"{self._tag(event.agent_id)}◆ {event.agent_type} started{description}", style="magenta")

    def _on_tool_started(self, event: ToolStarted) -> None:
        self.flush_text()
        self._running_tools[event.tool_call_id] = event.tool_name
        self._last_started_call = event.tool_call_id
        self._activity = "running " + ", ".join(dict.fromkeys(self._running_tools.values()))
        line = Text(self._tag(event.agent_id))
        line.append("● ", style="cyan")
        line.append(event.tool_name, style="bold")
        arguments = short_args(event.args, max(20, self.console.width - len(event.tool_name) - 12))
        if arguments:
            line.append(" " + arguments)
        self.console.print(line)

    def _on_tool_finished(self, event: ToolFinished) -> None:
        self.flush_text()
        self._running_tools.pop(event.tool_call_id, None)
        self._activity = (
            "running " + ", ".join(dict.fromkeys(self._running_tools.values()))
            if self._running_tools
            else "waiting for the model"
        )
        ok = event.outcome == "success"
        line = Text(self._tag(event.agent_id) + "  ⎿ ")
        line.append("✓" if ok else "✗", style="green" if ok else "red")
        if event.tool_call_id != self._last_started_call:
            # Parallel calls finish in any order: name the tool when its start is not the line above.
            line.append(f" {event.tool_name}")
        if not ok:
            line.append(f" {event.outcome}", style="red")
        line.append(f" {format_duration(event.duration_s)}", style="dim")
        preview = _one_line(event.preview, max(20, self.console.width - len(line) - 4))
        if preview:
            line.append(" · " + preview, style="dim")
        self.console.print(line)

    def _on_permission(self, event: PermissionAsked) -> None:
        if event.decision is None:
            self._asked.add(event.tool_call_id)
            return
        if event.tool_call_id in self._asked:
            # The question and its answer are already on screen (see show_permission_answer).
            self._asked.discard(event.tool_call_id)
            return
        if event.decision == "deny":
            self.flush_text()
            reason = f" ({event.reason})" if event.reason else ""
            line = f"  ⎿ ⊘ denied {event.tool_name}: {event.target}{reason}"
            self._print(self._tag(event.agent_id) + line, style="red")

    def _on_agent_finished(self, event: AgentFinished) -> None:
        if event.agent_id != self.main_agent_id:
            self._print(
                f"{self._tag(event.agent_id)}◆ finished ({event.stop_reason}) · {turn_summary(event)}",
                style="magenta",
            )
            return
        self.flush_text()
        self._run_started_at = None
        self._running_tools.clear()
        self._activity = ""
        if event.stop_reason == "cancelled":
            self._print("⏹ interrupted; the conversation so far is kept", style="yellow")
        elif event.stop_reason not in ("completed", "error"):
            detail = event.result.rsplit("[", 1)[-1].rstrip("]") if event.result.endswith("]") else ""
            self._print(
                f"■ stopped ({event.stop_reason})" + (f": {detail}" if detail else ""), style="yellow"
            )
        self._print(turn_summary(event), style="dim")

    # -- the REPL's own lines ---------------------------------------------------------------

    def permission_question(self, request: PermissionRequest, agent_id: str) -> str:
        """The one-line question asked about ``request`` (tagged when not from the main agent)."""
        outside = " (outside the project)" if request.outside_project else ""
        return (
            f"{self._tag(agent_id)}Allow {request.description}{outside}? "
            "[y] once  [a] for this session  [n] deny"
        )

    def show_permission_answer(self, request: PermissionRequest, agent_id: str, answer: str) -> None:
        """Print the user's answer to a permission question, so it stays in the scrollback."""
        allowed = answer != "deny"
        line = Text(self._tag(agent_id) + "  ⎿ ")
        line.append("✓ " if allowed else "✗ ", style="green" if allowed else "red")
        line.append(f"{_ANSWER_WORDS.get(answer, answer)}: {request.description}")
        self.console.print(line)

    def startup(self, *, model: str, session_id: str, project_root: str, resumed: str | None) -> None:
        """Print the banner: model, session and project root.

        Args:
            model: ``provider:model`` of the main agent.
            session_id: Its session.
            project_root: Where tools work.
            resumed: None for a new session, else what to say about the resumed one (may be empty).

        """
        line = Text("nestor", style="bold")
        line.append(f" · {model} · ")
        if resumed is None:
            line.append(f"new session {session_id}")
        else:
            line.append(f"resumed {session_id}" + (f" ({resumed})" if resumed else ""))
        line.append(f" · {project_root}", style="dim")
        self.console.print(line)
        self._key_hint()

    def _key_hint(self) -> None:
        """Print the one-line reminder of the keys."""
        self._print(
            "Enter sends · Alt-Enter or Esc-Enter adds a line · Esc stops a run · /help · Ctrl-D exits",
            style="dim",
        )

    def info(self, text: str, *, style: str = "") -> None:
        """Print one plain line (no markup interpreted)."""
        self._print(text, style=style)

    def error(self, message: str, hint: str | None = None) -> None:
        """Print an ``error:`` line and its ``hint:``."""
        self._print(f"error: {message}", style="bold red")
        if hint:
            self._print(f"hint: {hint}", style="dim")

    # -- helpers ----------------------------------------------------------------------------

    def _tag(self, agent_id: str) -> str:
        if not agent_id or agent_id == self.main_agent_id:
            return ""
        agent_type = self._agent_types.get(agent_id)
        return f"[{agent_type} {agent_id[-6:]}] " if agent_type else f"[{agent_id[-6:]}] "

    def _print(self, text: str, *, style: str = "") -> None:
        self.console.print(Text(text, style=style))

    def _print_markdown(self, block: str) -> None:
        self.console.print(Markdown(block))
        self.console.print()


def turn_summary(event: AgentFinished) -> str:
    """``2 turns · 1.2k in / 340 out · $0.0042 · 3.1s`` for a finished run."""
    usage = Usage.from_dict(event.usage)
    turns = counted(event.num_turns, "turn")
    tokens = f"{format_tokens(usage.input_tokens)} in / {format_tokens(usage.output_tokens)} out"
    return f"{turns} · {tokens} · {format_cost(event.cost_usd)} · {format_duration(event.duration_s)}"


def counted(count: int, noun: str) -> str:
    """``1 message``, ``3 messages``: a count with its noun in the right number."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def compaction_line(event: Compacted) -> str:
    """One line saying what a compaction saved and what its summary cost."""
    summary = Usage.from_dict(event.usage)
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


def format_duration(seconds: float) -> str:
    """``0.3s``, ``12s``, ``2m05s``."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s"


def short_args(args: dict[str, Any], limit: int = 100) -> str:
    """A tool call's arguments in one line: its main ones (command, path, ...) if it has any, else all."""
    shown = [args[key] for key in _ARG_KEYS if key in args] or list(args.values())
    text = " ".join(value if isinstance(value, str) else repr(value) for value in shown)
    return _one_line(text, limit)


def _one_line(text: str, limit: int) -> str:
    """The first non-blank line of ``text``, whitespace collapsed, cut to ``limit`` characters."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    line = " ".join(first.split())
    more = len(line) > limit or len([ln for ln in text.splitlines() if ln.strip()]) > 1
    if len(line) > limit:
        line = line[: max(limit - 1, 0)]
    return line + "…" if more and line else line
