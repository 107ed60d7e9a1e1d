"""The progress printers of ``nestor run``, fed events directly."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from nestor.cli.headless import _event_printer
from nestor.core.events import (
    AgentFinished,
    AgentStarted,
    BackgroundNotice,
    Compacted,
    ErrorEvent,
    EventAdapter,
    PermissionAsked,
    Retrying,
    TextDelta,
    TodosUpdated,
    ToolFinished,
    ToolStarted,
)
from nestor.core.usage import Usage
from tests.cli.delegation_support import EXPLORE, GENERAL, delegated_run


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_text_mode_on_a_terminal_shows_tools_retries_and_denials_on_stderr() -> None:
    out, err = io.StringIO(), Terminal()
    printer = _event_printer("text", out, err)
    printer(ToolStarted(agent_id="a", tool_call_id="c", tool_name="bash", args={"command": "git status"}))
    printer(Retrying(agent_id="a", attempt=1, delay_s=2.0, reason="HTTP 429 (rate limited)"))
    printer(
        PermissionAsked(
            agent_id="a", tool_call_id="c", tool_name="bash", target="rm x", decision="deny", reason="r"
        )
    )
    printer(
        Compacted(
            agent_id="a",
            trigger="overflow",
            tokens_before=150_000,
            tokens_after=20_000,
            summarized_messages=40,
            kept_messages=2,
            duration_s=3.0,
        )
    )
    printer(TextDelta(agent_id="a", text="answer text"))
    assert err.getvalue().splitlines() == [
        "· bash git status",
        "· retrying in 2.0s: HTTP 429 (rate limited)",
        "· denied bash: rm x (r)",
        "· context compacted: 150.0k → 20.0k tokens; 40 messages summarised, 2 kept · summary 0 in, 0 out, "
        "cost unknown · 3.0s",
    ]
    assert out.getvalue() == ""  # the answer is printed once, at the end


def test_text_mode_when_piped_prints_no_progress() -> None:
    out, err = io.StringIO(), io.StringIO()
    _event_printer("text", out, err)(ToolStarted(agent_id="a", tool_call_id="c", tool_name="ls"))
    assert err.getvalue() == "" and out.getvalue() == ""


def test_stream_json_prints_each_event_as_one_line() -> None:
    out, err = io.StringIO(), io.StringIO()
    _event_printer("stream-json", out, err)(TextDelta(agent_id="a", text="hi"))
    assert json.loads(out.getvalue())["text"] == "hi"


def sub_agent(event_type: type[AgentStarted] | type[AgentFinished], agent_id: str, **fields: object):
    common: dict[str, object] = {
        "agent_id": agent_id,
        "parent_id": "main",
        "depth": 1,
        "agent_type": "explore",
    }
    return event_type.model_validate({**common, "description": "find auth code", **fields})


def test_text_mode_shows_sub_agents_indented_under_the_main_agent() -> None:
    out, err = io.StringIO(), Terminal()
    printer = _event_printer("text", out, err)
    finished = {"stop_reason": "completed", "result": "r", "duration_s": 2.0, "cost_usd": 0.001}
    printer(AgentStarted(agent_id="main"))
    printer(
        ToolStarted(
            agent_id="main", tool_call_id="t", tool_name="task", args={"description": "find auth code"}
        )
    )
    printer(sub_agent(AgentStarted, "ses_a"))
    printer(ToolStarted(agent_id="ses_a", tool_call_id="c1", tool_name="grep", args={"pattern": "def login"}))
    printer(ToolFinished(agent_id="ses_a", tool_call_id="c1", tool_name="grep"))
    printer(
        sub_agent(AgentStarted, "ses_b", parent_id="ses_a", depth=2, agent_type="general", description="dig")
    )
    printer(Retrying(agent_id="ses_b", attempt=1, delay_s=1.0, reason="HTTP 429"))
    printer(
        PermissionAsked(
            agent_id="ses_b",
            tool_call_id="c",
            tool_name="bash",
            target="rm x",
            decision="deny",
            reason="read-only",
        )
    )
    printer(ErrorEvent(agent_id="ses_b", message="provider down", hint="try later"))
    printer(
        sub_agent(
            AgentFinished,
            "ses_b",
            parent_id="ses_a",
            depth=2,
            agent_type="general",
            description="dig",
            **{**finished, "stop_reason": "error", "is_error": True},
        )
    )
    usage = Usage(input_tokens=1000, output_tokens=200).to_dict()
    printer(sub_agent(AgentFinished, "ses_a", usage=usage, **finished))
    printer(
        BackgroundNotice(
            agent_id="main", child_id="ses_c", child_type="general", status="completed", text="x"
        )
    )
    printer(TodosUpdated(agent_id="main", todos=[{"content": "Fix it", "status": "in_progress"}]))
    printer(TextDelta(agent_id="ses_a", text="a sub-agent's text is its report, not progress"))
    printer(AgentFinished(agent_id="main", stop_reason="completed", result="done"))
    assert err.getvalue().splitlines() == [
        "· task find auth code",
        "  [explore] find auth code …",
        "    [explore] · grep def login",
        "    [general] dig …",
        "      [general] · retrying in 1.0s: HTTP 429",
        "      [general] · denied bash: rm x (read-only)",
        "    [general] dig - failed: provider down (0 tools, 2.0s, 0 tok, $0.0010)",
        "      hint: try later",
        "  [explore] find auth code - done (1 tool, 2.0s, 1.2k tok, $0.0010)",
        "⇠ background agent ses_c (general) completed",
        "· todos: 0/1 done",
        "  ◐ Fix it",
    ]
    assert out.getvalue() == ""


async def test_a_delegated_run_in_stream_json_and_in_text(tmp_path: Path) -> None:
    stream, text = io.StringIO(), Terminal()
    run = await delegated_run(
        tmp_path,
        [_event_printer("stream-json", stream, io.StringIO()), _event_printer("text", io.StringIO(), text)],
    )
    main_id = run.main.session_id
    events = [EventAdapter.validate_json(line) for line in stream.getvalue().splitlines()]
    for kind in (AgentStarted, AgentFinished):
        of_children = [e for e in events if isinstance(e, kind) and e.agent_id != main_id]
        assert {(e.parent_id, e.depth, e.agent_type, e.description) for e in of_children} == {
            (main_id, 1, "explore", EXPLORE),
            (main_id, 1, "general", GENERAL),
        }
    lines = text.getvalue().splitlines()
    assert lines.count("· task find auth code where is login?") == 1
    assert {"  [explore] find auth code …", "  [general] check the tests …"} <= set(lines)
    assert {
        "    [explore] · grep def login",
        "    [explore] · view src/auth.py",
        "    [general] · ls .",
    } <= set(lines)
    done = [line for line in lines if " - done (" in line]
    assert len(done) == 2
    assert any(
        re.fullmatch(r"  \[explore\] find auth code - done \(2 tools, [\d.]+s, 330 tok, \$0\.0030\)", d)
        for d in done
    )
    # A sub-agent's start line comes before its tool lines.
    assert lines.index("  [explore] find auth code …") < lines.index("    [explore] · grep def login")
