"""Agent events as terminal output for the line-editor REPL.

The REPL keeps its input prompt usable while an agent runs, so everything is printed *above* the
prompt (prompt_toolkit's ``patch_stdout``) and output is append-only: nothing can be redrawn in
place the way ``rich.live`` would. Assistant text is therefore streamed block by block: each
Markdown block (paragraphs, lists, a fenced code block, ended by a blank line outside a fence) is
rendered as Markdown once it is complete, and the rest when the response ends or a tool starts.
:meth:`EventRenderer.status` says what is happening meanwhile, for the prompt's toolbar.

A running sub-agent is a line of the toolbar, with its tool calls counted live; when it ends, its
done line is printed (see :mod:`nestor.cli.agent_lines`). A start line in the scrollback would only
repeat the toolbar's. What sub-agents do in between (their tool calls, their text) is not printed:
their text is a report for the agent that started them, not for the user.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from nestor.cli.agent_lines import (
    SubAgentTracker,
    background_line,
    done_line,
    error_lines,
    todo_lines,
)
from nestor.cli.formatting import (
    compaction_line,
    counted,
    format_duration,
    one_line,
    short_args,
    turn_summary,
    usage_summary,
)
from nestor.core.events import (
    AgentFinished,
    AgentStarted,
    BackgroundNotice,
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
    TodosUpdated,
    ToolFinished,
    ToolStarted,
)
from nestor.core.permission import PERMISSION_CHOICES, PermissionRequest
from nestor.core.usage import format_tokens

__all__ = [
    "EventRenderer",
    "MarkdownBlocks",
    "compaction_line",
    "counted",
    "format_duration",
    "short_args",
    "turn_summary",
    "usage_summary",
]

_ANSWER_WORDS = {"once": "allowed once", "session": "allowed for this session", "deny": "denied"}
_SUB_AGENT_ANSWER_WORDS = {**_ANSWER_WORDS, "session": "allowed for this agent's session"}
_DONE_STYLES = {"completed": "magenta", "error": "red"}


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
        main_agent_id: The agent whose text is shown and whose runs get a summary line; every
            other agent is a sub-agent, shown in the toolbar while it runs, then by a done line,
            and tagged elsewhere.

    """

    def __init__(self, console: Console, *, main_agent_id: str = "") -> None:
        self.console = console
        self.main_agent_id = main_agent_id
        self._text = MarkdownBlocks()
        self._thinking = False
        self._agents = SubAgentTracker()
        self._asked: set[str] = set()
        self._running_tools: dict[str, str] = {}
        # The tool call whose start is the last line printed: its end line need not name the tool.
        self._last_line_call = ""
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
                if self._is_main(event.agent_id):
                    self._activity = f"retrying (attempt {event.attempt + 1})"
                line = f"↻ retrying in {event.delay_s:.1f}s (attempt {event.attempt}): {event.reason}"
                self._print(self._prefix(event.agent_id) + line, style="yellow")
            case RequestFinished():
                if self._is_main(event.agent_id):
                    # One response ends here; the next one (a queued prompt's answer) starts afresh.
                    self.flush_text()
                    self._activity = "waiting for the model"
            case PromptQueued():
                self._print(f"↳ queued for the next turn: {one_line(event.prompt, 80)}", style="dim")
            case CompactionStarted():
                self._on_compaction_started(event)
            case Compacted():
                self._print(self._prefix(event.agent_id) + compaction_line(event), style="dim")
            case SessionTitled():
                if self._is_main(event.agent_id):
                    self._print(f"session title: {event.title}", style="dim")
            case TodosUpdated():
                if self._is_main(event.agent_id):
                    self.flush_text()
                    for line in todo_lines(event.todos):
                        self._print(line)
            case BackgroundNotice():
                self.flush_text()
                self._print(background_line(event, self._agents.get(event.agent_id)), style="cyan")
            case AgentFinished():
                self._on_agent_finished(event)
            case ErrorEvent():
                self._on_error(event)
            case _:
                pass

    def flush_text(self) -> None:
        """Print the assistant text received but not shown yet (before anything else is printed)."""
        block = self._text.flush()
        if block:
            self._print_markdown(block)

    def status(self, now: float | None = None) -> str:
        """The toolbar's text: :meth:`main_status`, then one line per running sub-agent; empty when idle."""
        return "\n".join(line for line in (self.main_status(now), *self.agent_status(now)) if line)

    def main_status(self, now: float | None = None) -> str:
        """What the main agent is doing and for how long, e.g. ``running bash · 12s``; empty when idle."""
        if self._run_started_at is None:
            return ""
        elapsed = (time.time() if now is None else now) - self._run_started_at
        return f"{self._activity} · {format_duration(max(elapsed, 0.0))}"

    def agent_status(self, now: float | None = None) -> list[str]:
        """``  [explore] find auth code … 5 tools, 3.2s`` for each running sub-agent, indented by depth.

        Background sub-agents keep running after the main agent's run ended, so these lines may
        be there while :meth:`main_status` is empty.
        """
        return self._agents.live_lines(time.time() if now is None else now)

    def _on_text(self, event: TextDelta) -> None:
        if not self._is_main(event.agent_id):
            return
        self._activity = "writing"
        block = self._text.feed(event.text)
        if block:
            self._print_markdown(block)

    def _on_thinking(self, event: ThinkingDelta) -> None:
        if not self._is_main(event.agent_id) or self._thinking:
            return
        self._thinking = True
        self._activity = "thinking"
        self.flush_text()
        self._print("✻ thinking…", style="dim italic")

    def _on_agent_started(self, event: AgentStarted) -> None:
        if self._is_main(event.agent_id):
            self._run_started_at = event.timestamp
            self._activity = "waiting for the model"
            return
        self._agents.started(event)  # the toolbar shows it from now on (see agent_status)

    def _on_tool_started(self, event: ToolStarted) -> None:
        if not self._is_main(event.agent_id):
            self._agents.tool_started(event)
            return
        self.flush_text()
        self._running_tools[event.tool_call_id] = event.tool_name
        self._activity = "running " + ", ".join(dict.fromkeys(self._running_tools.values()))
        line = Text("● ", style="cyan")
        line.append(event.tool_name, style="bold")
        arguments = short_args(event.args, max(20, self.console.width - len(event.tool_name) - 12))
        if arguments:
            line.append(" " + arguments)
        self._print_text(line)
        self._last_line_call = event.tool_call_id

    def _on_tool_finished(self, event: ToolFinished) -> None:
        if not self._is_main(event.agent_id):
            self._agents.tool_finished(event)
            return
        self.flush_text()
        self._running_tools.pop(event.tool_call_id, None)
        self._activity = (
            "running " + ", ".join(dict.fromkeys(self._running_tools.values()))
            if self._running_tools
            else "waiting for the model"
        )
        ok = event.outcome == "success"
        line = Text("  ⎿ ")
        line.append("✓" if ok else "✗", style="green" if ok else "red")
        if event.tool_call_id != self._last_line_call:
            # Parallel calls (and sub-agents) print between a start and its end: name the tool then.
            line.append(f" {event.tool_name}")
        if not ok:
            line.append(f" {event.outcome}", style="red")
        line.append(f" {format_duration(event.duration_s)}", style="dim")
        preview = one_line(event.preview, max(20, self.console.width - len(line) - 4))
        if preview:
            line.append(" · " + preview, style="dim")
        self._print_text(line)

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
            mark = "  ⎿ ⊘" if self._is_main(event.agent_id) else "⊘"
            line = f"{mark} denied {event.tool_name}: {event.target}{reason}"
            self._print(self._prefix(event.agent_id) + line, style="red")

    def _on_compaction_started(self, event: CompactionStarted) -> None:
        self.flush_text()
        if self._is_main(event.agent_id):
            self._activity = "compacting the history"
        share = event.context_tokens / event.context_window if event.context_window else 0
        line = (
            f"⟳ compacting the history ({event.trigger}): {format_tokens(event.context_tokens)} "
            f"of {format_tokens(event.context_window)} tokens ({share:.0%})"
        )
        self._print(self._prefix(event.agent_id) + line, style="dim")

    def _on_error(self, event: ErrorEvent) -> None:
        if not self._is_main(event.agent_id) and self._agents.error(event) is not None:
            return  # a running sub-agent's errors are shown with its done line
        self.flush_text()
        self.error(self._prefix(event.agent_id) + event.message, event.hint)

    def _on_agent_finished(self, event: AgentFinished) -> None:
        if not self._is_main(event.agent_id):
            self._on_sub_agent_finished(event)
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

    def _on_sub_agent_finished(self, event: AgentFinished) -> None:
        self.flush_text()
        agent = self._agents.finished(event)
        self._print(done_line(event, agent), style=_DONE_STYLES.get(event.stop_reason, "yellow"))
        for line in error_lines(event, agent) if agent is not None else ():
            self._print(line, style="dim" if line.lstrip().startswith("hint:") else "red")

    # -- the REPL's own lines ---------------------------------------------------------------

    def permission_question(
        self, request: PermissionRequest, agent_id: str, choices: Sequence[str] = PERMISSION_CHOICES
    ) -> str:
        """The one-line question asked about ``request``; a sub-agent's says which agent asks.

        ``[explore 9f3a1c] wants to: Read /etc/hosts (outside the project). Allow? ...``; a yes/no
        question (``choices`` without ``session``: a project's MCP server to approve) shows its
        target, the server's definition, on a second line.
        """
        outside = " (outside the project)" if request.outside_project else ""
        if "session" not in choices:
            return f"{self._tag(agent_id)}{request.description}? [y] yes  [n] no\n  {request.target}"
        if self._is_main(agent_id):
            return f"Allow {request.description}{outside}? [y] once  [a] for this session  [n] deny"
        return (
            f"{self._tag(agent_id)}wants to: {request.description}{outside}. "
            "Allow? [y] once  [a] for this agent  [n] deny"
        )

    def show_permission_answer(
        self,
        request: PermissionRequest,
        agent_id: str,
        answer: str,
        choices: Sequence[str] = PERMISSION_CHOICES,
    ) -> None:
        """Print the user's answer to a permission question, so it stays in the scrollback."""
        allowed = answer != "deny"
        main = self._is_main(agent_id)
        words = (_ANSWER_WORDS if main else _SUB_AGENT_ANSWER_WORDS).get(answer, answer)
        if "session" not in choices:
            words = "yes" if allowed else "no"
        line = Text("  ⎿ " if main else self._prefix(agent_id))
        line.append("✓ " if allowed else "✗ ", style="green" if allowed else "red")
        line.append(f"{words}: {request.description}")
        self._print_text(line)

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
        self._print_text(line)
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

    def _is_main(self, agent_id: str) -> bool:
        return not agent_id or agent_id == self.main_agent_id

    def _tag(self, agent_id: str) -> str:
        """``[explore 9f3a1c] ``: a sub-agent's type and the end of its id; empty for the main agent."""
        if self._is_main(agent_id):
            return ""
        agent = self._agents.get(agent_id)
        return f"[{agent.agent_type} {agent_id[-6:]}] " if agent else f"[{agent_id[-6:]}] "

    def _prefix(self, agent_id: str) -> str:
        """The tag, indented by the sub-agent's depth when it is known."""
        agent = self._agents.get(agent_id)
        return (agent.indent if agent and not self._is_main(agent_id) else "") + self._tag(agent_id)

    def _print(self, text: str, *, style: str = "") -> None:
        self._print_text(Text(text, style=style))

    def _print_text(self, text: Text) -> None:
        self._last_line_call = ""
        self.console.print(text)

    def _print_markdown(self, block: str) -> None:
        self._last_line_call = ""
        self.console.print(Markdown(block))
        self.console.print()
