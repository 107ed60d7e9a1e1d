"""The progress ``nestor run`` prints on a terminal's stderr while it works (text output format).

One line per event worth knowing about: the main agent's tool calls, retries, compactions and
denials (``· bash git status``), its todo list when it changes, and for each sub-agent a start
and a done line (see :mod:`nestor.cli.agent_lines`) with its tool calls between them, indented
under it and prefixed with its type::

    · task find auth code
      [explore] find auth code …
        [explore] · grep def login
      [explore] find auth code - done (1 tool, 2.1s, 1.2k tok, $0.0010)

The main agent's text is not printed here: its answer is printed once, at the end, on stdout.
"""

from __future__ import annotations

from typing import TextIO

from nestor.cli.agent_lines import (
    SubAgentTracker,
    background_line,
    done_line,
    error_lines,
    indent,
    start_line,
    todo_lines,
)
from nestor.cli.formatting import compaction_line, short_args
from nestor.core.events import (
    AgentFinished,
    AgentStarted,
    BackgroundNotice,
    Compacted,
    ErrorEvent,
    Event,
    PermissionAsked,
    Retrying,
    TodosUpdated,
    ToolFinished,
    ToolStarted,
)

__all__ = ["TextProgress"]


class TextProgress:
    """A bus handler writing ``nestor run``'s progress lines to ``err``.

    The main agent is the one that starts at depth 0; an agent is a sub-agent once its start
    (depth 1 or more) has been seen.
    """

    def __init__(self, err: TextIO) -> None:
        self._err = err
        self._agents = SubAgentTracker()

    def __call__(self, event: Event) -> None:
        """Write the lines ``event`` calls for, if any."""
        match event:
            case AgentStarted() if event.depth > 0:
                self._write(start_line(self._agents.started(event)))
            case AgentFinished() if self._agents.get(event.agent_id) is not None or event.depth > 0:
                self._on_sub_agent_finished(event)
            case ToolStarted():
                self._agents.tool_started(event)
                self._write(f"{self._lead(event.agent_id)}{event.tool_name} {short_args(event.args)}")
            case ToolFinished():
                self._agents.tool_finished(event)
            case Retrying():
                self._write(f"{self._lead(event.agent_id)}retrying in {event.delay_s:.1f}s: {event.reason}")
            case Compacted():
                self._write(f"{self._lead(event.agent_id)}{compaction_line(event).removeprefix('⟳ ')}")
            case PermissionAsked() if event.decision == "deny":
                line = f"denied {event.tool_name}: {event.target} ({event.reason})"
                self._write(self._lead(event.agent_id) + line)
            case ErrorEvent():
                # A sub-agent's error goes on its done line; the main agent's ends the run and is
                # printed with its result.
                self._agents.error(event)
            case BackgroundNotice():
                self._write(background_line(event, self._agents.get(event.agent_id)))
            case TodosUpdated() if self._agents.get(event.agent_id) is None:
                for line in todo_lines(event.todos):
                    self._write("· " + line if not line.startswith(" ") else line)
            case _:
                pass

    def _on_sub_agent_finished(self, event: AgentFinished) -> None:
        agent = self._agents.finished(event)
        self._write(done_line(event, agent))
        for line in error_lines(event, agent) if agent is not None else ():
            self._write(line)

    def _lead(self, agent_id: str) -> str:
        """``· `` for the main agent; ``    [explore] · `` for a sub-agent, one level under its lines."""
        agent = self._agents.get(agent_id)
        if agent is None:
            return "· "
        return f"{indent(agent.depth + 1)}[{agent.agent_type}] · "

    def _write(self, line: str) -> None:
        self._err.write(line + "\n")
        self._err.flush()
